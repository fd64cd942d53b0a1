"""``liz discord run`` refuses a bad setup in one line, before any call to Discord."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.serve_process import run_liz

pytestmark = pytest.mark.slow


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_a_missing_token_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    result = run_liz(
        "discord", "run", "--agent", "business-advisor",
        env={"DISCORD_BOT_TOKEN": "", "OPENAI_API_KEY": "test"},
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode != 0
    (line,) = error_lines(result.stderr)
    assert "DISCORD_BOT_TOKEN" in line and "Traceback" not in result.stderr


def test_an_unknown_agent_is_the_same_error_as_everywhere(tmp_path: Path) -> None:
    result = run_liz(
        "discord", "run", "--agent", "nobody",
        env={"DISCORD_BOT_TOKEN": "a-token", "OPENAI_API_KEY": "test"},
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode != 0
    assert error_lines(result.stderr) == [
        "error: unknown agent 'nobody': there is no agent with id 'nobody'; "
        "the agents are: business-advisor"
    ]


def test_without_the_extra_one_line_names_the_pip_extra(tmp_path: Path) -> None:
    # discord.py made unimportable, as in an install without the extra.
    without_discord = "import sys; sys.modules['discord'] = None; from liz.cli import app; app()"
    result = subprocess.run(
        [sys.executable, "-c", without_discord, "discord", "run", "--agent", "business-advisor"],
        cwd=tmp_path,
        env={**os.environ, "DISCORD_BOT_TOKEN": "a-token", "OPENAI_API_KEY": "test"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert error_lines(result.stderr) == [
        "error: the Discord bot needs the discord extra: pip install 'liz-agents[discord]'"
    ]
