"""Every Python example in the README runs as written, against the scripted LLM server.

Each ```python block is saved under the file name its first line gives (``# app.py``), or
as ``example_N.py``, all in one project folder. Test files are run with pytest, a block
defining ``app = App(...)`` is served by ``liz serve`` and sent a message, and any other
block is run as a script.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.serve_process import liz_serve

pytestmark = pytest.mark.slow

README = Path(__file__).parent.parent / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
FILE_NAME = re.compile(r"#\s*([\w/.-]+\.py)\b")


def examples() -> list[tuple[str, str]]:
    found = []
    for number, code in enumerate(BLOCK.findall(README.read_text(encoding="utf-8")), 1):
        named = FILE_NAME.match(code.splitlines()[0]) if code.strip() else None
        found.append((named.group(1) if named else f"example_{number}.py", code))
    return found


def answer(request: RecordedRequest) -> str | dict[str, Any]:
    """A plausible answer to whatever an example asks the LLM."""
    if request.schema_name == "RouteChoice":
        return {"route": "conversation", "confidence": 0.9, "reasoning": "a question"}
    if request.schema_name == "ShouldRespond":
        return {"decision": "RESPOND", "reason": "it asks the agent something"}
    if request.schema_name == "ExtractedFacts":
        return {
            "facts": [
                {"text": "User loves green tea", "subject": "user", "categories": ["food", "tea"]}
            ]
        }
    if request.schema_name == "ReconcilePlan":
        return {"decisions": []}
    return "Bonjour!"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("readme")
    for name, code in examples():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(code, encoding="utf-8")
    return folder


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    server = ScriptedOpenAI()
    server.respond_with(answer)
    with server.serve() as base_url:
        yield {
            "OPENAI_BASE_URL": base_url,
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'readme.db'}",
            "PYTHONPATH": "",
        }


def test_the_readme_has_python_examples() -> None:
    assert len(examples()) >= 3


@pytest.mark.parametrize("name", [name for name, _ in examples()])
def test_readme_example_runs(name: str, project: Path, env: dict[str, str]) -> None:
    code = (project / name).read_text(encoding="utf-8")
    if Path(name).name.startswith("test_"):
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", name]
    else:
        command = [sys.executable, name]
    result = subprocess.run(
        command,
        cwd=project,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    if re.search(r"^app = App\(", code, re.MULTILINE):
        module = name.removesuffix(".py").replace("/", ".")
        with liz_serve(env, project, target=f"{module}:app") as url:
            agents = httpx.get(f"{url}/agents").json()["agents"]
            for agent in agents:
                body = {"input": {"agentId": agent["agentId"], "userId": "ann", "text": "Hi"}}
                reply = httpx.post(f"{url}/agent/input", json=body, timeout=30)
                assert reply.status_code == 200, reply.text
                assert reply.json()["text"] == "Bonjour!"
