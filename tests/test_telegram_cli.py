"""``liz telegram run`` refuses a bad setup in one line; its bot shows in /health, /metrics."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from liz.testing.fake_telegram import FakeTelegram
from liz.testing.openai_server import ScriptedOpenAI
from tests.serve_process import liz_serve, run_liz
from tests.telegram_process import TOKEN, Brain, answers, bot_env, running_bot, wait_until

pytestmark = pytest.mark.slow


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_a_missing_token_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    result = run_liz(
        "telegram", "run", "--agent", "business-advisor",
        env={"TELEGRAM_BOT_TOKEN": "", "OPENAI_API_KEY": "test"},
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode != 0
    assert len(error_lines(result.stderr)) == 1
    assert "TELEGRAM_BOT_TOKEN" in result.stderr and "Traceback" not in result.stderr


def test_a_refused_token_is_one_line_that_does_not_show_it(tmp_path: Path) -> None:
    telegram = FakeTelegram(token=TOKEN)
    with telegram.serve() as api_url:
        env = bot_env(api_url, "http://127.0.0.1:9/v1", f"file:{tmp_path / 'liz.db'}")
        env["TELEGRAM_BOT_TOKEN"] = "424242:a-revoked-token"
        result = run_liz("telegram", "run", "--agent", "business-advisor", env=env, cwd=tmp_path)
    assert result.returncode != 0
    assert error_lines(result.stderr) == [
        "error: Telegram refused the bot token (Unauthorized): check TELEGRAM_BOT_TOKEN"
    ]
    assert "a-revoked-token" not in result.stderr + result.stdout


def test_an_unknown_agent_is_the_same_error_as_everywhere(tmp_path: Path) -> None:
    telegram = FakeTelegram(token=TOKEN)
    with telegram.serve() as api_url:
        env = bot_env(api_url, "http://127.0.0.1:9/v1", f"file:{tmp_path / 'liz.db'}")
        result = run_liz("telegram", "run", "--agent", "nobody", env=env, cwd=tmp_path)
    assert result.returncode != 0
    assert error_lines(result.stderr) == [
        "error: unknown agent 'nobody': there is no agent with id 'nobody'; "
        "the agents are: business-advisor"
    ]
    assert telegram.calls == []  # nothing was asked of Telegram


def test_health_and_metrics_show_the_bot(tmp_path: Path) -> None:
    telegram = FakeTelegram(token=TOKEN)
    llm = ScriptedOpenAI()
    llm.respond_with(Brain())
    telegram.say("hello", user_id=7)
    database = f"file:{tmp_path / 'liz.db'}"
    with telegram.serve() as api_url, llm.serve() as llm_url:
        env = bot_env(api_url, llm_url, database)
        with running_bot(env, tmp_path):
            wait_until(lambda: answers(telegram, "hello") == 1, "the answer")
            with liz_serve(env, tmp_path) as url:
                health = httpx.get(f"{url}/health").json()
                metrics = httpx.get(f"{url}/metrics", headers={"Authorization": ""}).text
    (bot,) = health["connectors"]
    assert bot["bot"] == "telegram:424242"
    assert bot["answered"] == 1 and bot["backlog"] == 0
    assert bot["lastPollSecondsAgo"] < 60
    assert 'liz_connector_answered_messages{platform="telegram"} 1.0' in metrics
    assert 'liz_connector_backlog_messages{platform="telegram"} 0.0' in metrics
