"""Webhook mode on ``liz serve``: ``POST /telegram/{agentId}`` with Telegram's secret header."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from liz.testing.fake_telegram import FakeTelegram
from liz.testing.openai_server import ScriptedOpenAI
from tests.serve_process import liz_serve
from tests.telegram_process import TOKEN, Brain, answers, bot_env, wait_until

pytestmark = pytest.mark.slow

SECRET = "webhook-secret-42"


def test_updates_posted_with_the_secret_are_answered_once(tmp_path: Path) -> None:
    telegram = FakeTelegram(token=TOKEN)
    llm = ScriptedOpenAI()
    brain = Brain()
    llm.respond_with(brain)
    telegram.say("hello by webhook", user_id=7)
    telegram.say("sneaky", user_id=8)
    first, forged = telegram.take_updates()
    with telegram.serve() as api_url, llm.serve() as llm_url:
        env = bot_env(api_url, llm_url, f"file:{tmp_path / 'liz.db'}")
        env |= {"TELEGRAM_WEBHOOK_SECRET": SECRET, "LIZ_API_KEY": "server-key"}
        with liz_serve(env, tmp_path) as url:
            hook = f"{url}/telegram/business-advisor"
            header = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
            wrong = httpx.post(hook, json=forged, headers={"X-Telegram-Bot-Api-Secret-Token": "x"})
            missing = httpx.post(hook, json=forged)
            unknown = httpx.post(f"{url}/telegram/nobody", json=first, headers=header)
            posted = [httpx.post(hook, json=first, headers=header) for _ in range(2)]
            wait_until(lambda: answers(telegram, "hello by webhook") == 1, "the answer")
            telegram.say("a second one", user_id=7)
            (second,) = telegram.take_updates()
            assert httpx.post(hook, json=second, headers=header).status_code == 200
            wait_until(lambda: answers(telegram, "a second one") == 1, "the second answer")
    assert (wrong.status_code, missing.status_code, unknown.status_code) == (401, 401, 404)
    assert [response.status_code for response in posted] == [200, 200]
    assert answers(telegram, "hello by webhook") == 1  # Telegram's retry answered once
    assert "sneaky" not in brain.asked
    assert not any(call.method == "getUpdates" for call in telegram.calls)
