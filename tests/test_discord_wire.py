"""discord.py itself against a fake Discord speaking the wire format (REST and the
gateway): login, the intent check, messages built by discord.py from gateway
payloads, and what the bot posts back (a reply, mentions allowed only for its author)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from liz.agent import BaseAgent
from liz.connectors.bot import ChatBot
from liz.connectors.errors import ConnectorAuthError
from liz.discord.gateway import DiscordGateway
from liz.discord.platform import DiscordPlatform
from liz.discord.settings import DiscordSettings
from liz.pipeline import AgentFramework
from liz.testing.openai_server import ScriptedOpenAI
from liz.types import InputSource
from tests.discord_server import TOKEN, DiscordServer
from tests.telegram_process import Brain
from tests.test_discord_bot import until

pytestmark = pytest.mark.anyio

GUILD, CHANNEL, DM = 700, 701, 702


async def test_discord_py_messages_are_answered_as_replies_that_ping_only_the_author(
    framework: AgentFramework, agent: BaseAgent, scripted: ScriptedOpenAI, tmp_path: Path
) -> None:
    brain = Brain(pause=1.5)  # "typing" shows once an answer takes a while
    scripted.respond_with(brain)
    discord = DiscordServer(username="liz_bot")
    with discord.serve(tmp_path) as connector:
        settings = DiscordSettings(_env_file=None, bot_token=TOKEN, poll_timeout=0.1)
        platform = DiscordPlatform(settings, DiscordGateway(TOKEN, connector=connector))
        bot = ChatBot(agent, framework, platform, source=InputSource.DISCORD)
        task = asyncio.create_task(bot.run())
        try:
            await until(lambda: discord.connected() or task.done(), "the gateway connected")
            dm = discord.say("hello in private", user_id=8, channel_id=DM)
            discord.say("lunch, anyone?", user_id=9, channel_id=CHANNEL, guild_id=GUILD)
            asked = discord.say(
                "what is a margin?", user_id=9, channel_id=CHANNEL, guild_id=GUILD, mention_bot=True
            )
            discord.say(
                "and a markup?", user_id=10, channel_id=CHANNEL, guild_id=GUILD, reply_to_bot=True
            )
            await until(lambda: len(discord.posted) == 3 or task.done(), "three answers")
        finally:
            task.cancel()
            (ended,) = await asyncio.gather(task, return_exceptions=True)
            await platform.aclose()
    if isinstance(ended, Exception):  # the bot stopped on its own: show why
        raise ended
    by_channel = {(posted.channel_id, posted.body["content"]) for posted in discord.posted}
    assert by_channel == {
        (DM, "Re: hello in private"),
        (CHANNEL, "Re: @liz_bot what is a margin?"),
        (CHANNEL, "Re: and a markup?"),
    }
    first = next(p.body for p in discord.posted if p.channel_id == DM)
    assert int(first["message_reference"]["message_id"]) == dm
    mentions = [p.body["allowed_mentions"] for p in discord.posted]
    assert all(m == {"parse": [], "replied_user": True} for m in mentions), mentions
    # Each part carries its own nonce, enforced: a repeat after a crash posts nothing.
    nonces = [p.body["nonce"] for p in discord.posted]
    assert all(p.body["enforce_nonce"] is True for p in discord.posted)
    assert len(set(nonces)) == 3 and all(len(nonce) <= 25 for nonce in nonces)
    assert any(int(p.body["message_reference"]["message_id"]) == asked for p in discord.posted)
    assert DM in discord.typing and CHANNEL in discord.typing
    assert not any("lunch" in said for said in brain.asked)


async def test_a_refused_token_is_the_one_line_naming_the_setting(tmp_path: Path) -> None:
    discord = DiscordServer()
    with discord.serve(tmp_path) as connector:
        wire = DiscordGateway("a-revoked-token", connector=connector)
        with pytest.raises(ConnectorAuthError) as refused:
            await wire.login()
        await wire.close()
    assert refused.value.message == "Discord refused the bot token: check DISCORD_BOT_TOKEN"


async def test_without_the_content_intent_the_bot_says_so_and_does_not_ask_for_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    discord = DiscordServer(username="liz_bot", content=False)
    with discord.serve(tmp_path) as connector:
        settings = DiscordSettings(_env_file=None, bot_token=TOKEN, poll_timeout=0.1)
        platform = DiscordPlatform(settings, DiscordGateway(TOKEN, connector=connector))
        with caplog.at_level(logging.WARNING, logger="liz.discord.platform"):
            await platform.identify()
            await platform.read(None)
        await platform.aclose()
    assert "@liz_bot has the Message Content intent off" in caplog.text
    assert discord.identified and not discord.identified[0] & (1 << 15)


async def test_what_was_said_while_the_bot_was_stopped_is_read_from_history_and_answered_once(
    framework: AgentFramework, agent: BaseAgent, scripted: ScriptedOpenAI, tmp_path: Path
) -> None:
    scripted.respond_with(Brain())
    discord = DiscordServer(username="liz_bot")

    async def run_until(condition: Callable[[], bool], what: str) -> None:
        settings = DiscordSettings(_env_file=None, bot_token=TOKEN, poll_timeout=0.1)
        platform = DiscordPlatform(settings, DiscordGateway(TOKEN, connector=connector))
        bot = ChatBot(agent, framework, platform, source=InputSource.DISCORD)
        task = asyncio.create_task(bot.run())
        try:
            await until(lambda: discord.connected() or task.done(), "the gateway connected")
            await until(lambda: condition() or task.done(), what)
        finally:
            task.cancel()
            (ended,) = await asyncio.gather(task, return_exceptions=True)
            await platform.aclose()
        if isinstance(ended, Exception):
            raise ended

    def answers() -> list[str]:
        return sorted(posted.body["content"] for posted in discord.posted)

    with discord.serve(tmp_path) as connector:
        discord.say("too early", user_id=8, channel_id=DM)  # no cursor yet: not seen

        async def first_round() -> None:
            await until(discord.connected, "connected")
            discord.say("hello", user_id=8, channel_id=DM)
            discord.say("hi all", user_id=9, channel_id=CHANNEL, guild_id=GUILD, mention_bot=True)

        starting = asyncio.create_task(first_round())
        await run_until(lambda: len(discord.posted) == 2, "two answers")
        await starting
        # Nobody is connected: the gateway pushes these to no one.
        discord.say("while stopped", user_id=8, channel_id=DM)
        discord.say("lunch?", user_id=9, channel_id=CHANNEL, guild_id=GUILD)
        discord.say("still there?", user_id=9, channel_id=CHANNEL, guild_id=GUILD, mention_bot=True)
        await run_until(lambda: len(discord.posted) == 4, "the missed messages answered")
    assert answers() == [
        "Re: @liz_bot hi all",
        "Re: @liz_bot still there?",
        "Re: hello",
        "Re: while stopped",
    ]


async def test_catching_up_reads_the_whole_history_after_the_cursor(tmp_path: Path) -> None:
    discord = DiscordServer()
    seen = discord.say("the last one the bot saw", user_id=8, channel_id=DM)
    missed = [discord.say(f"missed {n}", user_id=8, channel_id=DM) for n in range(250)]
    with discord.serve(tmp_path) as connector:
        wire = DiscordGateway(TOKEN, connector=connector)
        try:
            history = await wire.history(DM, seen)
        finally:
            await wire.close()
    assert [message.id for message in history] == missed  # more than one page, in order
