"""Every code block of the README and the docs that is meant to run runs, as written.

Python blocks are saved under the file name their first line gives (``# app.py``; a page's
unnamed blocks make one script, in order), all in one project folder, and run against
the scripted LLM server: ``test_*.py`` with pytest,
the others as scripts; a block defining ``app = App(...)`` is also served by ``liz serve``
and every agent is sent a message. Shell blocks run in bash (``set -e``), in that folder
(``make`` ones in the repository), with ``.venv/bin`` first on the PATH. A comment just
before a block says how it runs or why it does not (see ``MARKER``); a shell block with
no such comment runs to its end and must exit 0. Blocks in other languages (json, text,
none) are output or syntax, not commands. A block followed (after some prose, perhaps) by
``<!-- output -->`` and a fenced block shows what it prints: each line of that block
(``...`` stands for any text) must be among the lines the example printed, in order.
A script that prints must show what; those scripts also run on liz's scripted model
(``LIZ_SCRIPTED_LLM=true``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.serve_process import free_port, liz_serve

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^(?P=indent)```", re.S | re.M
)
# The comments just above a block, one a line:
#   <!-- needs: credentials -->      not run (NOT_RUN says why; the test reports it skipped)
#   <!-- runs: until "TEXT" -->      runs until it prints TEXT, then is stopped (a server)
#   <!-- runs: against liz serve --> runs with `liz serve` up, localhost:3000 meaning it
# Servers get a free port (SERVER_PORT, and for `--port 3000` or 4010); blocks using the
# scripted model run without the real LLM's settings, which it refuses to start beside.
MARKER = re.compile(r"<!--\s*(?P<kind>needs|runs):\s*(?P<what>.*?)\s*-->\s*$")
# What a block prints: the next fenced block, marked so (prose may come between).
OUTPUT = re.compile(
    r"(?:(?!```).)*?<!--\s*output\s*-->\s*\n *```[\w-]*\n(?P<shown>.*?)^ *```", re.S | re.M
)
FILE_NAME = re.compile(r"#\s*([\w/.-]+\.py)\b")
SHELL = {"bash", "sh", "shell", "console"}
RUNNABLE = SHELL | {"python", "py"}
# Why a marked block is not run; any other `needs:` fails the test.
NOT_RUN = {
    "credentials": "needs real credentials (an LLM key, X or a PostgreSQL server of yours)",
}
FIXED_PORT = re.compile(r"--port (3000|4010)\b")  # a server the docs start: a free port instead
SERVER_URL = re.compile(r"(?:http://)?(?:localhost|127\.0\.0\.1):3000")
UNTIL = re.compile(r'until "(?P<text>[^"]+)"')
SCRIPTED = re.compile(r"--scripted\b|\bscripted-llm\b|\bLIZ_SCRIPTED_LLM=true\b")
REAL_LLM = {"OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL"}
COMMAND = re.compile(r"^\s*\$?\s*(liz|make|curl|pip|python|uvicorn|pytest)\s", re.M)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    code: str
    needs: str | None  # why it is not run (NOT_RUN)
    runs: str | None  # how it runs: 'until "TEXT"' or 'against liz serve'
    shown: str | None = None  # what the page says it prints (an <!-- output --> block)

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def file_name(self) -> str:
        first = self.code.splitlines()[0] if self.code.strip() else ""
        named = FILE_NAME.match(first)
        return named.group(1) if named else f"{self.page.stem.replace('-', '_')}_examples.py"

    @property
    def named(self) -> bool:
        return bool(self.code.strip() and FILE_NAME.match(self.code.splitlines()[0]))


def one_script_a_page(found: list[Block]) -> list[Block]:
    """A page's blocks without a file name are one script, read in order, as a tutorial is."""
    merged: dict[Path, Block] = {}
    kept = []
    for block in found:
        if block.named:
            kept.append(block)
        elif block.page in merged:
            first = merged[block.page]
            whole = Block(
                first.page,
                first.line,
                first.lang,
                first.code + "\n\n" + block.code,
                first.needs or block.needs,
                first.runs,
                "".join(part for part in (first.shown, block.shown) if part) or None,
            )
            kept[kept.index(first)] = merged[block.page] = whole
        else:
            merged[block.page] = block
            kept.append(block)
    return kept


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            lang = match.group("lang").lower()
            if lang not in RUNNABLE:
                continue
            marks = {}
            for before in reversed(text[: match.start()].rstrip("\n").split("\n")):
                marked = MARKER.search(before)
                if not marked:
                    break
                marks[marked.group("kind")] = marked.group("what")
            indent = len(match.group("indent"))
            code = "\n".join(line[indent:] for line in match.group("code").splitlines()) + "\n"
            shown = OUTPUT.match(text, match.end())
            found.append(
                Block(
                    page=page,
                    line=text.count("\n", 0, match.start()) + 1,
                    lang="python" if lang in {"python", "py"} else "shell",
                    code=code,
                    needs=marks.get("needs"),
                    runs=marks.get("runs"),
                    shown=shown.group("shown") if shown else None,
                )
            )
    return found


def unique(found: list[Block]) -> list[Block]:
    """A block repeated word for word on another page runs once, under its first place."""
    seen: set[tuple[str, str, str | None, str | None]] = set()
    kept = []
    for block in found:
        if (block.lang, block.code, block.needs, block.runs) not in seen:
            seen.add((block.lang, block.code, block.needs, block.runs))
            kept.append(block)
    return kept


PYTHON = one_script_a_page(unique([block for block in blocks() if block.lang == "python"]))
SHELL_BLOCKS = unique([block for block in blocks() if block.lang == "shell"])


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
    """Every Python block as a file of one folder, as a reader following the docs has it."""
    folder = tmp_path_factory.mktemp("docs-examples")
    written: dict[str, Block] = {}
    for block in PYTHON:
        name = block.file_name
        if name in written and written[name].code != block.code:
            pytest.fail(f"{block.id} and {written[name].id} both write {name}, differently")
        written[name] = block
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(block.code, encoding="utf-8")
    return folder


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    server = ScriptedOpenAI()
    server.respond_with(answer)
    with server.serve() as base_url:
        yield {
            "OPENAI_BASE_URL": base_url,
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'docs.db'}",
            "SERVER_PORT": str(free_port()),
            "PYTHONPATH": "",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }


def assert_shows(block: Block, output: str) -> None:
    """Each line the page shows (``...``: any text) is a line of ``output``, in order."""
    if block.shown is None:
        return
    printed = [line.strip() for line in output.splitlines()]
    at = 0
    for wanted in filter(None, (line.strip() for line in block.shown.splitlines())):
        pattern = re.compile(".*".join(re.escape(part) for part in wanted.split("...")))
        found = next((i for i in range(at, len(printed)) if pattern.fullmatch(printed[i])), None)
        assert found is not None, f"{block.id} says it prints {wanted!r}; it printed:\n{output}"
        at = found + 1


def prints(block: Block) -> bool:
    """A script whose printed lines are its result (an app module prints when served)."""
    return (
        block.lang == "python"
        and "print(" in block.code
        and not Path(block.file_name).name.startswith("test_")
        and not re.search(r"^app = App\(", block.code, re.MULTILINE)
    )


def test_every_script_that_prints_shows_what() -> None:
    """An example whose text promises output shows it, so the test can hold it to it."""
    silent = [block.id for block in PYTHON if prints(block) and block.shown is None]
    assert not silent, f"add an <!-- output --> block after these examples: {silent}"


@pytest.mark.parametrize(
    "block", [b for b in PYTHON if prints(b)], ids=[b.id for b in PYTHON if prints(b)]
)
def test_script_prints_the_same_on_the_scripted_model(
    block: Block, project: Path, env: dict[str, str]
) -> None:
    """What a reader without a key runs: ``LIZ_SCRIPTED_LLM=true python SCRIPT``."""
    skip_if_not_run(block)
    scripted = {
        name: value for name, value in {**os.environ, **env}.items() if name not in REAL_LLM
    }
    result = subprocess.run(
        [sys.executable, block.file_name],
        cwd=project,
        env={**scripted, "LIZ_SCRIPTED_LLM": "true"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert_shows(block, result.stdout)


def skip_if_not_run(block: Block) -> None:
    if block.needs is not None:
        assert block.needs in NOT_RUN, f"{block.id}: unknown marker needs: {block.needs}"
        pytest.skip(NOT_RUN[block.needs])


def test_the_docs_have_examples_to_run() -> None:
    assert len(PYTHON) >= 5
    assert len(SHELL_BLOCKS) >= 5


def test_no_command_hides_in_a_block_without_a_language() -> None:
    """Commands go in bash blocks, which run; a block without a language is not run."""
    hidden = [
        f"{page.relative_to(ROOT)}: {match.group('code')[:60]!r}"
        for page in PAGES
        for match in FENCE.finditer(page.read_text(encoding="utf-8"))
        if not match.group("lang") and COMMAND.search(match.group("code"))
    ]
    assert not hidden, "give these blocks a language (bash runs; text is output or syntax)"


def test_every_marker_is_known() -> None:
    """A typo in a marker would leave a block unrun without anyone noticing."""
    for block in blocks():
        if block.needs is not None:
            assert block.needs in NOT_RUN, f"{block.id}: unknown marker needs: {block.needs}"
        if block.runs is not None:
            runs = block.runs
            assert runs == "against liz serve" or UNTIL.fullmatch(runs), f"{block.id}: {runs}"


@pytest.mark.parametrize("block", PYTHON, ids=[block.id for block in PYTHON])
def test_python_block_runs(block: Block, project: Path, env: dict[str, str]) -> None:
    skip_if_not_run(block)
    name = block.file_name
    if Path(name).name.startswith("test_"):
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", name]
    else:
        command = [sys.executable, name]
    result = subprocess.run(
        command, cwd=project, env={**os.environ, **env}, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert_shows(block, result.stdout)
    if re.search(r"^app = App\(", block.code, re.MULTILINE):
        module = name.removesuffix(".py").replace("/", ".")
        with liz_serve(env, project, target=f"{module}:app") as url:
            agents = httpx.get(f"{url}/agents").json()["agents"]
            assert agents, f"{name} serves no agent"
            for agent in agents:
                body = {"input": {"agentId": agent["agentId"], "userId": "ann", "text": "Hi"}}
                reply = httpx.post(f"{url}/agent/input", json=body, timeout=30)
                assert reply.status_code == 200, reply.text
                assert reply.json()["text"] == "Bonjour!"


def bash(code: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["bash", "-e", "-o", "pipefail", "-c", code],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def run_until(code: str, text: str, cwd: Path, env: dict[str, str]) -> str:
    """Start a block that runs until stopped; stop it once it prints ``text``."""
    process = bash(code, cwd, env)
    assert process.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + 240
    try:
        for line in process.stdout:
            seen.append(line)
            if text in line:
                return "".join(seen)
            if time.monotonic() > deadline:
                break
        raise AssertionError(f"it never printed {text!r}:\n{''.join(seen)}")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=[block.id for block in SHELL_BLOCKS])
def test_shell_block_runs(block: Block, project: Path, env: dict[str, str]) -> None:
    skip_if_not_run(block)
    cwd = ROOT if re.match(r"\s*(\w+=\S*\s+)*make ", block.code) else project
    what = block.runs or ""
    code = FIXED_PORT.sub(f"--port {env['SERVER_PORT']}", block.code)
    full = {**os.environ, **env}
    if SCRIPTED.search(block.code):  # the scripted model refuses to start beside a real one
        full = {name: value for name, value in full.items() if name not in REAL_LLM}
    if until := UNTIL.fullmatch(what):
        assert_shows(block, run_until(code, until.group("text"), cwd, full))
        return
    if what == "against liz serve":
        with liz_serve(env, project) as url:
            process = bash(SERVER_URL.sub(url, code), cwd, full)
            output, _ = process.communicate(timeout=120)
        assert process.returncode == 0, output
        assert '"error"' not in output and "event: error" not in output, output
        assert_shows(block, output)
        return
    process = bash(code, cwd, full)
    output, _ = process.communicate(timeout=180)
    assert process.returncode == 0, output
    assert_shows(block, output)
