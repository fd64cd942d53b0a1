"""No key anywhere: every command and entry point that needs an LLM runs on liz's scripted
model with ``LIZ_SCRIPTED_LLM=true`` (or ``--scripted``), as real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from liz.testing.scripted_model import SCRIPTED_PREFIX
from tests.serve_process import free_port, liz_serve
from tests.serve_process import run_liz as liz

pytestmark = pytest.mark.slow

NO_LLM = {"OPENAI_API_KEY": "", "OPENROUTER_API_KEY": "", "OPENAI_BASE_URL": ""}

SHOP = '''
from liz import App, BaseAgent, Character
from liz.routes import conversation

shop = BaseAgent(Character(agent_id="shop", name="Shop", system="You help with orders."))
shop.add_route(conversation)


@shop.tool
def order_status(order_id: str) -> dict:
    """Look up an order."""
    return {"id": order_id, "status": "shipped"}


@shop.tool(requires_approval=True)
def refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


app = App([shop])
'''


def database(tmp_path: Path) -> dict[str, str]:
    return {**NO_LLM, "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'first.db'}"}


def say(url: str, text: str) -> httpx.Response:
    body = {"input": {"agentId": "shop", "userId": "ann", "text": text}}
    return httpx.post(f"{url}/agent/input", json=body, timeout=30)


def until_printed(command: list[str], text: str, env: dict[str, str], cwd: Path) -> str:
    """Run ``command`` until a line holds ``text``; everything it printed until then."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line and process.poll() is not None:
                break
            seen.append(line)
            if text in line:
                break
    finally:
        process.terminate()
        process.wait(timeout=15)
    return "".join(seen)


def test_the_scripted_model_calls_a_tool_asked_for_and_records_its_usage_as_scripted(
    tmp_path: Path,
) -> None:
    (tmp_path / "shop.py").write_text(SHOP)
    with liz_serve(database(tmp_path), tmp_path, target="shop:app", flags=("--scripted",)) as url:
        called = say(url, 'call order_status {"order_id": "A1"}')
        unknown = say(url, "call teleport {}")
        waiting = say(url, 'call refund {"order_id": "A1"}')
        pending = waiting.json()["pendingApproval"]
        approved = httpx.post(
            f"{url}/agent/approvals/{pending['id']}", json={"approve": True}, timeout=30
        )
        waiting = say(url, 'call refund {"order_id": "B2"}')
        denied = httpx.post(
            f"{url}/agent/approvals/{waiting.json()['pendingApproval']['id']}",
            json={"approve": False},
            timeout=30,
        )
        models = httpx.get(f"{url}/usage", params={"by": "model"}, timeout=10).json()
        port = url.rsplit(":", 1)[1]
    assert called.status_code == 200, called.text
    assert called.json()["text"].startswith(SCRIPTED_PREFIX)
    assert '"status":"shipped"' in called.json()["text"].replace(" ", "")
    assert (
        "no tool 'teleport'" in unknown.json()["text"] and "order_status" in unknown.json()["text"]
    )
    assert pending["tool"] == "refund" and pending["arguments"] == {"order_id": "A1"}
    assert approved.status_code == 200 and "refunded A1" in approved.json()["text"]
    assert denied.status_code == 200 and "denied" in denied.json()["text"]
    assert [line["key"] for line in models["usage"]] == ["scripted"]
    log = (tmp_path / f"serve-{port}.log").read_text()
    assert log.count("Started server process") == 1, log
    assert '"POST /agent/input HTTP/1.1" 200' in log, log  # the access log is on
    first = log.splitlines()[0]
    assert "/playground" in first and "scripted model" in first, log


def test_without_a_key_the_503_and_the_log_name_the_scripted_model(tmp_path: Path) -> None:
    with liz_serve(database(tmp_path), tmp_path) as url:
        body = {"input": {"agentId": "business-advisor", "userId": "ann", "text": "Hi"}}
        answer = httpx.post(f"{url}/agent/input", json=body, timeout=30)
        port = url.rsplit(":", 1)[1]
    assert answer.status_code == 503
    assert "LIZ_SCRIPTED_LLM=true" in answer.json()["error"]
    log = (tmp_path / f"serve-{port}.log").read_text()
    assert "LIZ_SCRIPTED_LLM=true" in log.splitlines()[0], log  # its first line says how
    assert "/playground" in log.splitlines()[1], log


def test_the_asgi_factory_answers_with_the_scripted_model(tmp_path: Path) -> None:
    port = free_port()
    env = {**database(tmp_path), "LIZ_SCRIPTED_LLM": "true"}
    assert liz("db", "upgrade", env=env, cwd=tmp_path).returncode == 0
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "liz.asgi:app_from_env",
            "--port",
            str(port),
        ],
        cwd=tmp_path,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        body = {"input": {"agentId": "business-advisor", "userId": "ann", "text": "Hi"}}
        answer = httpx.post(f"{url}/agent/input", json=body, timeout=30)
    finally:
        process.terminate()
        process.wait(timeout=15)
    assert answer.status_code == 200, answer.text
    assert answer.json()["text"].startswith(SCRIPTED_PREFIX)


def test_facts_search_takes_scripted_and_says_so_without_it(tmp_path: Path) -> None:
    env = database(tmp_path)
    assert liz("db", "upgrade", env=env, cwd=tmp_path).returncode == 0
    args = ("facts", "search", "tea", "--agent", "business-advisor", "--user", "ann")
    refused = liz(*args, env=env, cwd=tmp_path)
    scripted = liz(*args, "--scripted", env=env, cwd=tmp_path)
    from_env = liz(*args, env={**env, "LIZ_SCRIPTED_LLM": "true"}, cwd=tmp_path)
    assert refused.returncode == 2 and "--scripted" in refused.stderr
    assert scripted.returncode == from_env.returncode == 0, scripted.stderr + from_env.stderr
    assert scripted.stdout == from_env.stdout == "no facts\n"


def test_twitter_dry_run_takes_scripted_and_writes_a_scripted_post(tmp_path: Path) -> None:
    env = database(tmp_path)
    command = [sys.executable, "-m", "liz", "twitter", "--dry-run", "--scripted"]
    printed = until_printed(command, "would post", env, tmp_path)
    assert "would post" in printed and SCRIPTED_PREFIX in printed, printed


def test_a_bad_setting_in_scripted_mode_is_its_one_line_and_nothing_starts(tmp_path: Path) -> None:
    result = liz(
        "serve", "--scripted", env={**database(tmp_path), "LIZ_LLM_TIMEOUT": "soon"}, cwd=tmp_path
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: bad setting LIZ_LLM_TIMEOUT='soon'")
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_a_misspelt_setting_in_dotenv_gets_one_line_naming_the_right_one(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("LIZ_SCRIPTD_LLM=true\n")
    result = liz("chat", env=database(tmp_path), cwd=tmp_path, stdin="Hi\n")
    warnings = [line for line in result.stderr.splitlines() if "LIZ_SCRIPTD_LLM" in line]
    assert len(warnings) == 1, result.stderr
    assert "did you mean LIZ_SCRIPTED_LLM?" in warnings[0]


def test_a_misspelt_character_field_gets_one_line_in_python_and_in_json(tmp_path: Path) -> None:
    (tmp_path / "tutor.py").write_text(
        "from liz import App, BaseAgent, Character\n"
        "from liz.routes import conversation\n"
        "tutor = BaseAgent(Character(agent_id='tutor', name='Tu', sytem='You teach.'))\n"
        "tutor.add_route(conversation)\n"
        "app = App([tutor])\n"
    )
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "quill.json").write_text(
        '{"agentId": "quill", "name": "Quill", "bio": ["writes"], "sytem": "You write."}'
    )
    env = {**database(tmp_path), "LIZ_SCRIPTED_LLM": "true"}
    in_python = liz("chat", "tutor:app", env=env, cwd=tmp_path, stdin="Hi\n")
    in_json = liz("chat", "--agents", str(folder), env=env, cwd=tmp_path, stdin="Hi\n")
    for result, where in ((in_python, "character 'tutor'"), (in_json, "quill.json")):
        assert result.returncode == 0, result.stderr
        lines = [line for line in result.stderr.splitlines() if "sytem" in line]
        assert len(lines) == 1 and where in lines[0], result.stderr
        assert "sytem (did you mean system?)" in lines[0]


def test_a_syntax_error_in_the_users_app_is_its_file_line_and_message(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("def price(:\n    return 1\n")
    (tmp_path / "shop.py").write_text("import helper\nfrom liz import App\napp = App()\n")
    result = liz("serve", "shop:app", "--scripted", env=database(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        f"error: {tmp_path / 'helper.py'}, line 1: SyntaxError: invalid syntax: def price(:\n"
    )
