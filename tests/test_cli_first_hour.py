"""The first hour at the `liz` command: what a new user runs, as real processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from liz.testing.scripted_model import SCRIPTED_PREFIX
from tests.serve_process import liz_serve
from tests.serve_process import run_liz as liz

pytestmark = pytest.mark.slow

CHARACTERS = Path(__file__).parent / "data" / "characters"
NO_LLM = {"OPENAI_API_KEY": "", "OPENROUTER_API_KEY": "", "OPENAI_BASE_URL": ""}


def without(
    module: str, *args: str, env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``liz ARGS`` in a Python where ``module`` cannot be imported (an extra not installed)."""
    program = (
        f"import sys; sys.modules[{module!r}] = None; from liz.cli import app; app(prog_name='liz')"
    )
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_version_has_a_short_and_a_long_flag(tmp_path: Path) -> None:
    short, long = liz("-V", env={}, cwd=tmp_path), liz("--version", env={}, cwd=tmp_path)
    assert short.returncode == long.returncode == 0
    assert short.stdout == long.stdout and short.stdout.startswith("liz ")


def test_init_writes_an_installable_project_and_quotes_its_folder(tmp_path: Path) -> None:
    created = liz("init", "My Bot", env={}, cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    assert "cd 'My Bot' &&" in created.stdout
    project = tomllib.loads((tmp_path / "My Bot" / "pyproject.toml").read_text())
    assert any(dep.startswith("liz") for dep in project["project"]["dependencies"])
    assert ".env" in (tmp_path / "My Bot" / ".gitignore").read_text().splitlines()


def test_db_upgrade_is_quiet_unless_asked(tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'q.db'}"}
    quiet = liz("db", "upgrade", env=env, cwd=tmp_path)
    loud = liz(
        "db",
        "upgrade",
        "--verbose",
        env={"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'v.db'}"},
        cwd=tmp_path,
    )
    assert quiet.returncode == loud.returncode == 0
    assert "alembic" not in quiet.stderr and "Running upgrade" in loud.stderr


def test_serve_logs_no_migration_lines(tmp_path: Path) -> None:
    env = {**NO_LLM, "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 's.db'}"}
    with liz_serve(env, tmp_path, flags=("--scripted",)) as url:
        port = url.rsplit(":", 1)[1]
    log = (tmp_path / f"serve-{port}.log").read_text()
    assert "alembic" not in log, log


def test_chat_picks_the_only_agent(tmp_path: Path) -> None:
    env = {**NO_LLM, "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'c.db'}"}
    result = liz("chat", "--scripted", env=env, cwd=tmp_path, stdin="Hello\n")
    assert result.returncode == 0, result.stderr
    assert f"Morgan> {SCRIPTED_PREFIX}" in result.stdout


def test_chat_with_a_server_picks_its_only_agent_and_labels_replies_with_its_name(
    tmp_path: Path,
) -> None:
    env = {**NO_LLM, "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'r.db'}"}
    with liz_serve(env, tmp_path, flags=("--scripted",)) as url:
        result = liz("chat", "--url", url, env=NO_LLM, cwd=tmp_path, stdin="Hello\n")
        both = liz("chat", "--url", url, "--scripted", env=NO_LLM, cwd=tmp_path, stdin="Hi\n")
    assert result.returncode == 0, result.stderr
    assert f"Morgan> {SCRIPTED_PREFIX}" in result.stdout
    assert both.returncode == 2 and "--scripted" in both.stderr


def test_with_several_agents_chat_and_twitter_name_them(tmp_path: Path) -> None:
    folder = tmp_path / "agents"
    folder.mkdir()
    for name in ("liz.json", "eliza_v1.json"):
        shutil.copy(CHARACTERS / name, folder / name)
    env = {
        **NO_LLM,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "DATABASE_URL": "sqlite+aiosqlite:///:memory:",
    }
    for command in ("chat", "twitter"):
        result = liz(command, "--agents", str(folder), env=env, cwd=tmp_path, stdin="Hi\n")
        assert result.returncode == 2, result.stderr
        assert "--agent ID" in result.stderr and "the agents are:" in result.stderr


def test_twitter_dry_run_picks_the_only_agent(tmp_path: Path) -> None:
    env = {
        **NO_LLM,
        "LIZ_SCRIPTED_LLM": "true",
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 't.db'}",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "liz", "twitter", "--dry-run"],
        cwd=tmp_path,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            line = process.stdout.readline()
            seen.append(line)
            if "dry run:" in line:
                break
    finally:
        process.terminate()
        process.wait(timeout=15)
    assert any("dry run:" in line for line in seen), "".join(seen)


def test_missing_extras_are_one_line_naming_the_pip_command(tmp_path: Path) -> None:
    postgres = without(
        "asyncpg",
        "db",
        "upgrade",
        env={"DATABASE_URL": "postgresql://u@127.0.0.1:9/db"},
        cwd=tmp_path,
    )
    assert postgres.returncode == 2
    assert (
        postgres.stderr
        == "error: a PostgreSQL DATABASE_URL needs its driver: pip install 'liz-agents[postgres]'\n"
    )
    env = {
        **NO_LLM,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "DATABASE_URL": "sqlite+aiosqlite:///:memory:",
    }
    twitter = without("twitter_text", "twitter", "--dry-run", env=env, cwd=tmp_path)
    assert twitter.returncode == 2
    assert twitter.stderr.strip().splitlines()[-1:] == [
        "error: the Twitter/X bot needs the twitter extra: pip install 'liz-agents[twitter]'"
    ]
    assert twitter.stderr.count("liz-agents[twitter]") == 1


def test_facts_retry_of_an_unknown_job_exits_2_and_changes_nothing(tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'f.db'}"}
    assert liz("db", "upgrade", env=env, cwd=tmp_path).returncode == 0
    retried = liz("facts", "retry", "99", env=env, cwd=tmp_path)
    discarded = liz("facts", "discard", "99", env=env, cwd=tmp_path)
    assert retried.returncode == discarded.returncode == 2
    assert "job 99 is not in the queue" in retried.stderr
