"""The Discord bot on the connector core, end to end in-process: the real chain, the
real database (SQLite and PostgreSQL), the scripted LLM, and a fake Discord where
discord.py would be (liz.testing.fake_discord)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx
import pytest
from sqlalchemy import select

from liz.agent import BaseAgent
from liz.connectors.bot import ChatBot
from liz.connectors.errors import ConnectorAuthError
from liz.db.tables import MemoryRecord
from liz.discord.platform import DiscordPlatform
from liz.discord.settings import DiscordSettings
from liz.pipeline import AgentFramework
from liz.testing.fake_discord import SERVER_CHANNEL, FakeDiscord
from liz.testing.openai_server import ScriptedOpenAI
from liz.types import InputSource
from tests.telegram_process import Brain

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def running(
    framework: AgentFramework, agent: BaseAgent, discord: FakeDiscord, **settings: object
) -> AsyncIterator[ChatBot]:
    """A bot process, its gateway connected: runs until the block ends (stopped as
    Ctrl-C stops it)."""
    options = DiscordSettings(_env_file=None, bot_token="x", poll_timeout=0.05, **settings)  # type: ignore[arg-type]
    platform = DiscordPlatform(options, discord)
    bot = ChatBot(agent, framework, platform, source=InputSource.DISCORD, leader_retry_seconds=0.1)
    task = asyncio.create_task(bot.run())
    try:
        await until(lambda: discord.connected or task.done(), "the gateway connected")
        yield bot
    finally:
        task.cancel()
        (ended,) = await asyncio.gather(task, return_exceptions=True)
        await platform.aclose()
    if isinstance(ended, Exception):  # the bot stopped on its own: show why
        raise ended


async def until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def answers(discord: FakeDiscord, text: str) -> int:
    return sum(1 for sent in discord.sent if sent.text == f"Re: {text}")


async def test_a_direct_message_is_answered_as_a_reply_with_typing_shown(
    framework: AgentFramework, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    scripted.respond_with(Brain(pause=1.5))  # "typing" shows once an answer takes a while
    discord = FakeDiscord()
    async with running(framework, agent, discord):
        said = discord.say("hello", user_id=7)
        await until(lambda: answers(discord, "hello") == 1, "the answer")
    (sent,) = discord.sent
    assert (sent.channel_id, sent.reply_to) == (said.channel_id, said.id)
    assert discord.typing_in and set(discord.typing_in) == {said.channel_id}


async def test_in_a_server_only_mentions_and_replies_are_answered_each_persons_own(
    framework: AgentFramework, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    brain = Brain()
    scripted.respond_with(brain)
    discord = FakeDiscord(username="liz_bot")
    async with running(framework, agent, discord):
        discord.say("we were talking about lunch", user_id=8, channel_id=SERVER_CHANNEL)
        discord.say(
            "I am another bot", user_id=50, channel_id=SERVER_CHANNEL, from_bot=True, mention=True
        )
        discord.say("what is a margin?", user_id=8, channel_id=SERVER_CHANNEL, mention=True)
        discord.say("and a markup?", user_id=9, channel_id=SERVER_CHANNEL, reply_to_bot=True)
        await until(lambda: len(discord.sent_to(SERVER_CHANNEL)) == 2, "both answers")
    # Two people's messages are answered each in its own turn, in either order.
    assert sorted(discord.sent_to(SERVER_CHANNEL)) == [
        "Re: @liz_bot what is a margin?",
        "Re: and a markup?",
    ]
    assert not any("lunch" in asked or "another bot" in asked for asked in brain.asked)
    async with framework.runtime.sessions() as session:
        rows = (await session.scalars(select(MemoryRecord))).all()
    people = {
        (row.user_id, row.room_id)
        for row in rows
        if "markup" in row.content or "margin" in row.content
    }
    room = f"discord:{SERVER_CHANNEL}"
    assert {("discord:8", room), ("discord:9", room)} <= people


async def test_a_long_reply_arrives_whole_in_parts_under_2000(
    framework: AgentFramework, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    paragraph = "This sentence is part of a long answer about pricing. " * 12
    long_reply = "\n\n".join(f"Part {n}. {paragraph}" for n in range(10))
    scripted.respond_with(Brain(reply=lambda said: long_reply))
    discord = FakeDiscord()
    async with running(framework, agent, discord):
        said = discord.say("tell me everything", user_id=7)
        await until(lambda: "".join(discord.sent_to(said.channel_id)).count("Part ") == 10, "all")
    parts = discord.sent_to(said.channel_id)
    assert len(parts) >= 4 and all(len(part) <= 2000 for part in parts)
    assert re.sub(r"\s", "", "".join(parts)) == re.sub(r"\s", "", long_reply)


async def test_messages_sent_while_the_bot_was_stopped_are_answered_once_at_start(
    framework: AgentFramework, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    scripted.respond_with(Brain())
    discord = FakeDiscord()
    async with running(framework, agent, discord):
        discord.say("before the stop", user_id=7)
        discord.say("in the server before", user_id=8, channel_id=SERVER_CHANNEL, mention=True)
        await until(lambda: len(discord.sent) == 2, "two answers")
    # The gateway pushes these to nobody: only the channels' history has them.
    discord.say("while stopped", user_id=7)
    discord.say("also while stopped", user_id=8, channel_id=SERVER_CHANNEL, mention=True)
    async with running(framework, agent, discord):
        await until(lambda: len(discord.sent) == 4, "the missed messages answered")
        discord.say("after the restart", user_id=7)
        await until(lambda: answers(discord, "after the restart") == 1, "a new message answered")
    assert answers(discord, "before the stop") == 1 and answers(discord, "while stopped") == 1
    assert answers(discord, "@liz_test_bot also while stopped") == 1
    assert len(discord.sent) == 5


async def test_a_part_whose_answer_was_lost_is_sent_again_and_posted_once(
    framework: AgentFramework,
    agent: BaseAgent,
    scripted: ScriptedOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    scripted.respond_with(Brain())
    discord = FakeDiscord()
    discord.answers_lost = 1  # Discord posts the part; the bot hears a reset connection
    with caplog.at_level(logging.WARNING, logger="liz.connectors.outbox"):
        async with running(framework, agent, discord):
            said = discord.say("hello", user_id=7)
            await until(lambda: "may have been sent" in caplog.text, "the part sent again")
            discord.say("and then?", user_id=7)
            await until(lambda: answers(discord, "and then?") == 1, "the next answer")
    assert discord.sent_to(said.channel_id) == ["Re: hello", "Re: and then?"]


async def test_an_llm_outage_keeps_the_message_until_the_llm_is_back(
    framework: AgentFramework,
    agent: BaseAgent,
    scripted: ScriptedOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    scripted.respond_with(Brain())
    scripted.fail_next(503, times=3)
    discord = FakeDiscord()
    with caplog.at_level(logging.WARNING, logger="liz.connectors.bot"):
        async with running(framework, agent, discord):
            said = discord.say("hello during the outage", user_id=7)
            await until(lambda: len(discord.sent) == 1, "the answer once the LLM is back")
    assert discord.sent_to(said.channel_id) == ["Re: hello during the outage"]
    assert "waits to be answered" in caplog.text


async def test_with_an_allowlist_everyone_else_gets_no_reply_and_no_llm_call(
    framework: AgentFramework, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    brain = Brain()
    scripted.respond_with(brain)
    discord = FakeDiscord()
    async with running(framework, agent, discord, allowed_users=[7]):
        stranger = discord.say("from a stranger", user_id=8)
        discord.say("from the owner", user_id=7)
        await until(lambda: answers(discord, "from the owner") == 1, "the owner's answer")
    assert discord.sent_to(stranger.channel_id) == []
    assert brain.asked == ["from the owner"]


async def test_without_the_message_content_intent_the_bot_says_so_at_start(
    framework: AgentFramework,
    agent: BaseAgent,
    scripted: ScriptedOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    scripted.respond_with(Brain())
    discord = FakeDiscord(username="liz_bot", reads_content=False)
    with caplog.at_level(logging.INFO):
        async with running(framework, agent, discord):
            discord.say("hello", user_id=7)
            await until(lambda: len(discord.sent) == 1, "the answer")
    intent = [r.getMessage() for r in caplog.records if "Message Content intent" in r.getMessage()]
    assert len(intent) == 1 and intent[0].startswith("@liz_bot has the Message Content intent off")
    assert "discord bot @liz_bot (id 4242) answers for agent business-advisor" in caplog.text


async def test_a_refused_token_stops_the_bot(framework: AgentFramework, agent: BaseAgent) -> None:
    discord = FakeDiscord(token_accepted=False)
    platform = DiscordPlatform(DiscordSettings(_env_file=None, bot_token="x"), discord)
    bot = ChatBot(agent, framework, platform, source=InputSource.DISCORD)
    with pytest.raises(ConnectorAuthError, match="DISCORD_BOT_TOKEN"):
        await bot.run()
    assert discord.connections == 0


async def test_health_and_metrics_show_the_bot(
    framework: AgentFramework, agent: BaseAgent, scripted: ScriptedOpenAI, client: httpx.AsyncClient
) -> None:
    scripted.respond_with(Brain())
    discord = FakeDiscord()
    async with running(framework, agent, discord):
        discord.say("hello", user_id=7)
        await until(lambda: answers(discord, "hello") == 1, "the answer")
    health = (await client.get("/health")).json()
    metrics = (await client.get("/metrics")).text
    (bot,) = health["connectors"]
    assert (bot["bot"], bot["answered"], bot["backlog"]) == ("discord:4242", 1, 0)
    assert 'liz_connector_answered_messages{platform="discord"} 1.0' in metrics
