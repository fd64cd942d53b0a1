"""``liz telegram run`` as a real process: every message answered once, across restarts,
on SQLite and PostgreSQL, against the fake Bot API and the scripted LLM."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from liz.testing.fake_telegram import FakeTelegram
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.telegram_process import (
    TOKEN,
    Brain,
    answers,
    bot_env,
    last_user_text,
    polled_after_last_send,
    running_bot,
    wait_until,
)

pytestmark = pytest.mark.slow

USERS = 6


def test_a_sigkill_while_answering_loses_nothing_and_doubles_at_most_one(
    tmp_path: Path, database_url: str
) -> None:
    telegram = FakeTelegram(token=TOKEN)
    llm = ScriptedOpenAI()
    llm.respond_with(Brain(pause=0.3))  # slow enough that the kill lands mid-stream
    said = [f"user {user} message {n}" for n in range(2) for user in range(USERS)]
    for number, text in enumerate(said):
        telegram.say(text, user_id=100 + number % USERS)
    with telegram.serve() as api_url, llm.serve() as llm_url:
        env = bot_env(api_url, llm_url, database_url)
        with running_bot(env, tmp_path, "first") as first:
            wait_until(lambda: len(telegram.sent) >= 3, "three answers before the kill")
            first.kill()
        answered_before = len(telegram.sent)
        assert answered_before < len(said)  # the kill came while answering
        with running_bot(env, tmp_path, "second") as second:
            second.wait_for("reading and answering")
            wait_until(lambda: all(answers(telegram, text) for text in said), "every answer")
    counts = {text: answers(telegram, text) for text in said}
    assert all(count >= 1 for count in counts.values()), counts
    assert sum(count - 1 for count in counts.values()) <= 1, counts


def test_a_clean_restart_answers_nothing_twice(tmp_path: Path, database_url: str) -> None:
    telegram = FakeTelegram(token=TOKEN)
    llm = ScriptedOpenAI()
    llm.respond_with(Brain())
    for user in range(3):
        telegram.say(f"hello from {user}", user_id=200 + user)
    with telegram.serve() as api_url, llm.serve() as llm_url:
        env = bot_env(api_url, llm_url, database_url)
        with running_bot(env, tmp_path, "first") as first:
            wait_until(lambda: len(telegram.sent) == 3, "three answers")
            first.terminate()
        polls_before = sum(1 for call in telegram.calls if call.method == "getUpdates")
        with running_bot(env, tmp_path, "second") as second:
            second.wait_for("reading and answering")
            wait_until(
                lambda: (
                    sum(1 for c in telegram.calls if c.method == "getUpdates") >= polls_before + 2
                ),
                "two polls after the restart",
            )
            telegram.say("one more", user_id=200)
            wait_until(lambda: answers(telegram, "one more") == 1, "the new message answered")
    assert [answers(telegram, f"hello from {user}") for user in range(3)] == [1, 1, 1]
    assert len(telegram.sent) == 4


def test_a_429_is_waited_out_as_telegram_asks(tmp_path: Path) -> None:
    telegram = FakeTelegram(token=TOKEN)
    llm = ScriptedOpenAI()
    llm.respond_with(Brain())
    telegram.rate_limit("sendMessage", retry_after=2)
    telegram.say("are you there?", user_id=7)
    with telegram.serve() as api_url, llm.serve() as llm_url:
        env = bot_env(api_url, llm_url, f"file:{tmp_path / 'liz.db'}")
        with running_bot(env, tmp_path) as bot:
            wait_until(lambda: answers(telegram, "are you there?") == 1, "the answer")
            log = bot.log
    sends = [call.status for call in telegram.calls if call.method == "sendMessage"]
    assert sends == [429, 200]
    assert "rate limited; waiting 2s" in log


def test_a_long_reply_is_split_under_4096_with_nothing_lost(tmp_path: Path) -> None:
    paragraph = "This sentence is part of a long answer about pricing. " * 30
    long_reply = "\n\n".join(f"Part {n}. {paragraph}" for n in range(8))
    telegram = FakeTelegram(token=TOKEN)
    llm = ScriptedOpenAI()
    llm.respond_with(Brain(reply=lambda said: long_reply))
    telegram.say("tell me everything", user_id=7)
    with telegram.serve() as api_url, llm.serve() as llm_url:
        env = bot_env(api_url, llm_url, f"file:{tmp_path / 'liz.db'}")
        with running_bot(env, tmp_path):
            wait_until(lambda: "".join(telegram.sent_to(7)).count("Part ") == 8, "the whole reply")
    parts = telegram.sent_to(7)
    assert len(parts) >= 3
    assert all(len(part) <= 4096 for part in parts)
    assert re.sub(r"\s", "", "".join(parts)) == re.sub(r"\s", "", long_reply)
    assert all(part.rstrip().endswith(".") for part in parts)  # cut at sentence ends


def test_in_a_group_only_messages_for_the_bot_are_answered(tmp_path: Path) -> None:
    telegram = FakeTelegram(token=TOKEN, username="liz_test_bot")
    llm = ScriptedOpenAI()
    brain = Brain()
    llm.respond_with(brain)
    group = -1001
    telegram.say("we were talking about lunch", user_id=8, chat_id=group, chat_type="group")
    telegram.say("/help@other_bot", user_id=8, chat_id=group, chat_type="group")
    telegram.say("@liz_test_bot what is a margin?", user_id=8, chat_id=group, chat_type="group")
    telegram.say("and a markup?", user_id=9, chat_id=group, chat_type="group", reply_to_bot=True)
    telegram.say(None, user_id=7, media="sticker")
    telegram.say(None, user_id=7, media="voice")
    telegram.say(None, user_id=7, media="photo", caption="my shop front")
    telegram.say("/start", user_id=7, first_name="Grace")
    telegram.say("last one", user_id=7)
    with telegram.serve() as api_url, llm.serve() as llm_url:
        env = bot_env(api_url, llm_url, f"file:{tmp_path / 'liz.db'}")
        with running_bot(env, tmp_path):
            wait_until(lambda: answers(telegram, "last one") == 1, "the last message answered")
    assert telegram.sent_to(group) == ["Re: @liz_test_bot what is a margin?", "Re: and a markup?"]
    assert [m.reply_to is not None for m in telegram.sent if m.chat_id == group] == [True, True]
    private = telegram.sent_to(7)
    assert private[0] == "Re: my shop front"
    assert "Grace just opened a chat with you on Telegram" in private[1]
    assert private[2] == "Re: last one"
    assert not any("lunch" in asked or "help" in asked for asked in brain.asked)


def test_typing_shows_while_a_slow_answer_is_thought_and_not_for_a_quick_one(
    tmp_path: Path,
) -> None:
    telegram = FakeTelegram(token=TOKEN)
    llm = ScriptedOpenAI()
    quick, slow = Brain(), Brain(pause=2.5)

    async def brain(request: RecordedRequest) -> Any:
        thinker = slow if last_user_text(request).startswith("slow") else quick
        return await thinker(request)

    llm.respond_with(brain)
    telegram.say("quick question", user_id=7)
    telegram.say("slow question", user_id=8)
    with telegram.serve() as api_url, llm.serve() as llm_url:
        env = bot_env(api_url, llm_url, f"file:{tmp_path / 'liz.db'}")
        with running_bot(env, tmp_path):
            wait_until(lambda: answers(telegram, "slow question") == 1, "the slow answer")
    assert answers(telegram, "quick question") == 1
    typing = [c for c in telegram.calls if c.method == "sendChatAction"]
    assert typing and all(c.params["action"] == "typing" for c in typing)
    assert {int(c.params["chat_id"]) for c in typing} == {8}


def test_two_processes_for_one_bot_one_polls_the_other_waits(
    tmp_path: Path, database_url: str
) -> None:
    telegram = FakeTelegram(token=TOKEN)
    llm = ScriptedOpenAI()
    llm.respond_with(Brain())
    with telegram.serve() as api_url, llm.serve() as llm_url:
        env = bot_env(api_url, llm_url, database_url)
        with running_bot(env, tmp_path, "a") as first, running_bot(env, tmp_path, "b") as second:
            first.wait_for("answers for agent")
            second.wait_for("answers for agent")
            wait_until(lambda: "standing by" in first.log + second.log, "one process standing by")
            leader, standby = (first, second) if "standing by" in second.log else (second, first)
            for n in range(4):
                telegram.say(f"question {n}", user_id=300 + n)
            wait_until(lambda: len(telegram.sent) == 4, "four answers")
            # Killed between polls: no send is in flight (that window is the other test's).
            wait_until(lambda: polled_after_last_send(telegram), "a poll after the sends")
            leader.kill()
            telegram.say("after the leader died", user_id=300)
            wait_until(
                lambda: answers(telegram, "after the leader died") == 1,
                "the standby answers",
                timeout=90,
            )
            assert "reading and answering" in standby.log
    assert telegram.conflicts == 0  # never two getUpdates at once
    assert [answers(telegram, f"question {n}") for n in range(4)] == [1, 1, 1, 1]


def test_an_llm_outage_keeps_the_message_until_the_llm_is_back(tmp_path: Path) -> None:
    telegram = FakeTelegram(token=TOKEN)
    llm = ScriptedOpenAI()
    llm.respond_with(Brain())
    llm.fail_next(503, times=3)
    telegram.say("hello during the outage", user_id=7)
    with telegram.serve() as api_url, llm.serve() as llm_url:
        env = bot_env(api_url, llm_url, f"file:{tmp_path / 'liz.db'}")
        with running_bot(env, tmp_path) as bot:
            wait_until(
                lambda: answers(telegram, "hello during the outage") == 1,
                "the answer once the LLM is back",
            )
            log = bot.log
    assert "waits to be answered" in log
    assert telegram.sent_to(7) == ["Re: hello during the outage"]


def test_the_token_never_reaches_a_log_line_or_the_llm(tmp_path: Path) -> None:
    telegram = FakeTelegram(token=TOKEN)
    llm = ScriptedOpenAI()
    llm.respond_with(Brain())
    telegram.say(None, user_id=7, media="photo", caption="what do you see?")
    with telegram.serve() as api_url, llm.serve() as llm_url:
        env = bot_env(api_url, llm_url, f"file:{tmp_path / 'liz.db'}")
        with running_bot(env, tmp_path, args=("--log-level", "debug")) as bot:
            wait_until(lambda: len(telegram.sent) == 1, "the answer")
            log = bot.log
    assert "telegram bot @liz_test_bot (id 424242)" in log
    secret = TOKEN.split(":", 1)[1]
    assert secret not in log
    assert all(secret not in str(request.body) for request in llm.requests)


def test_with_an_allowlist_everyone_else_gets_no_reply_and_no_llm_call(tmp_path: Path) -> None:
    telegram = FakeTelegram(token=TOKEN)
    llm = ScriptedOpenAI()
    brain = Brain()
    llm.respond_with(brain)
    telegram.say("from a stranger", user_id=8)
    telegram.say("from the owner", user_id=7)
    with telegram.serve() as api_url, llm.serve() as llm_url:
        env = bot_env(api_url, llm_url, f"file:{tmp_path / 'liz.db'}")
        env["TELEGRAM_ALLOWED_USERS"] = "7, 70"
        with running_bot(env, tmp_path):
            wait_until(lambda: answers(telegram, "from the owner") == 1, "the owner's answer")
            wait_until(lambda: telegram.pending() == 0, "both updates read")
    assert telegram.sent_to(8) == []
    assert brain.asked == ["from the owner"]
