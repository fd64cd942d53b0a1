"""Settings are one tree, loaded once: the facts' and the learning queue's branches keep
their environment names, an empty value means unset, and a bad value stops `liz serve`
before it says it is running, naming the setting and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from liz.asgi import app_from_env
from liz.config import Settings
from liz.config.loading import load_settings
from liz.errors import UsageError
from tests.serve_process import free_port, liz_serve, run_liz


def test_the_branches_read_their_own_prefixes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIZ_FACTS_SEARCH_LIMIT", "7")
    monkeypatch.setenv("LIZ_LEARNING_LEASE_SECONDS", "12")
    settings = load_settings(Settings, _env_file=None)
    assert settings.facts.search_limit == 7
    assert settings.learning.lease_seconds == 12


def test_a_bad_value_in_a_branch_is_named_by_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LIZ_LEARNING_POLL_SECONDS", "0")
    with pytest.raises(UsageError, match="bad setting LIZ_LEARNING_POLL_SECONDS='0'"):
        load_settings(Settings, _env_file=None)


def test_the_burst_settings_are_read_by_their_names_and_the_former_batch_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LIZ_LEARN_AFTER_IDLE", "45")
    monkeypatch.setenv("LIZ_LEARNING_BATCH_SIZE", "5")
    settings = load_settings(Settings, _env_file=None)
    assert (settings.learning.learn_after_idle, settings.learning.batch_size) == (45, 5)
    monkeypatch.setenv("LIZ_LEARN_BATCH", "7")
    assert load_settings(Settings, _env_file=None).learning.batch_size == 7


def test_empty_values_in_dotenv_mean_unset(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("LIZ_AGENTS_DIR=\nOPENAI_BASE_URL=\nLIZ_JWT_SECRET=\n")
    settings = load_settings(Settings, _env_file=env_file)
    assert settings.liz_agents_dir is None
    assert settings.openai_base_url is None
    assert settings.liz_jwt_secret is None


def test_a_short_jwt_secret_is_refused_and_never_shown() -> None:
    with pytest.raises(UsageError) as refused:
        load_settings(Settings, _env_file=None, liz_jwt_secret="hunter2")
    assert "LIZ_JWT_SECRET must be at least 32 bytes long" in refused.value.message
    assert "secrets.token_urlsafe" in refused.value.message  # how to make one
    assert "hunter2" not in refused.value.message


def test_the_scripted_llm_is_off_unless_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings(Settings, _env_file=None).liz_scripted_llm is False
    monkeypatch.setenv("LIZ_SCRIPTED_LLM", "true")
    assert load_settings(Settings, _env_file=None).liz_scripted_llm is True


def test_serve_with_the_env_examples_empty_agents_dir_serves_the_bundled_agents(
    tmp_path: Path,
) -> None:
    (tmp_path / ".env").write_text(f"LIZ_AGENTS_DIR=\nDATABASE_URL=file:{tmp_path / 'liz.db'}\n")
    env = {name: "" for name in ("LIZ_AGENTS_DIR", "OPENAI_API_KEY", "OPENROUTER_API_KEY")}
    with liz_serve(env, tmp_path) as url:
        agents = httpx.get(f"{url}/agents", timeout=10).json()["agents"]
    assert [agent["agentId"] for agent in agents] == ["business-advisor"]


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("LIZ_JWT_SECRET", "too-short", "LIZ_JWT_SECRET must be at least 32 bytes long"),
        ("OPENAI_BASE_URL", "not a url", "OPENAI_BASE_URL must be an http(s) URL"),
        (
            "LIZ_LEARN_AFTER_IDLE",
            "-5",
            "bad setting LIZ_LEARN_AFTER_IDLE='-5': Input should be greater than or equal to 0",
        ),
        ("LIZ_LEARN_BATCH", "0", "bad setting LIZ_LEARN_BATCH='0': Input should be greater"),
        ("LIZ_LOG_FORMAT", "yaml", "bad setting LIZ_LOG_FORMAT='yaml': Input should be 'text'"),
    ],
)
def test_serve_refuses_a_bad_setting_before_it_says_it_is_running(
    tmp_path: Path, name: str, value: str, says: str
) -> None:
    env = {name: value, "DATABASE_URL": f"file:{tmp_path / 'liz.db'}"}
    result = run_liz("serve", "--port", str(free_port()), env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stderr
    assert "running" not in (result.stdout + result.stderr).lower()
    assert value not in result.stderr or name != "LIZ_JWT_SECRET"  # a secret is never echoed


def test_a_bad_log_format_is_one_line(tmp_path: Path) -> None:
    env = {"LIZ_LOG_FORMAT": "yaml", "DATABASE_URL": f"file:{tmp_path / 'liz.db'}"}
    result = run_liz("serve", "--port", str(free_port()), env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: bad setting LIZ_LOG_FORMAT='yaml': Input should be 'text' or 'json'"
    ]


def test_the_log_format_in_dotenv_makes_json_log_lines(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        f"LIZ_LOG_FORMAT=json\nDATABASE_URL=file:{tmp_path / 'liz.db'}\n"
    )
    with liz_serve({"LIZ_LOG_FORMAT": ""}, tmp_path) as url:
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200
    (log,) = tmp_path.glob("serve-*.log")
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert any("Uvicorn running" in line["message"] for line in lines)
    assert {"time", "level", "logger", "message"} <= set(lines[0])


def test_the_asgi_factory_serves_the_app_named_in_dotenv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "dotenv_named_app.py").write_text("from liz import App\n\napp = App()\n")
    (tmp_path / ".env").write_text("LIZ_APP=dotenv_named_app:app\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LIZ_APP", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert app_from_env().agents == {}  # not the bundled agents: the app named in .env
