"""``liz discord run`` as a real process: every message answered once across restarts,
against a fake Discord reached through ``DISCORD_PROXY`` over real TLS, and the
scripted LLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from liz.testing.openai_server import ScriptedOpenAI
from tests.discord_server import TOKEN, DiscordServer
from tests.telegram_process import Brain, running_bot, wait_until

pytestmark = pytest.mark.slow

USERS = 6
GUILD, CHANNEL = 700, 701


def bot_env(proxy: str, cert: Path, llm_url: str, database_url: str) -> dict[str, str]:
    return {
        "DISCORD_BOT_TOKEN": TOKEN,
        "DISCORD_PROXY": proxy,
        "SSL_CERT_FILE": str(cert),  # the fake's certificate for discord.com
        "DISCORD_POLL_TIMEOUT": "0.5",
        "OPENAI_BASE_URL": llm_url,
        "OPENAI_API_KEY": "test",
        "DATABASE_URL": database_url,
        "LIZ_LLM_MAX_RETRIES": "0",
    }


def answers(discord: DiscordServer, said: str) -> int:
    """How many messages the bot posted that answer ``said``."""
    return sum(1 for posted in discord.posted if posted.body.get("content") == f"Re: {said}")


def test_a_sigkill_while_answering_loses_nothing_and_doubles_at_most_one(
    tmp_path: Path, database_url: str
) -> None:
    discord = DiscordServer()
    llm = ScriptedOpenAI()
    llm.respond_with(Brain(pause=0.3))  # slow enough that the kill lands mid-stream
    said = [f"user {user} message {n}" for n in range(2) for user in range(USERS)]
    with discord.serve_behind_proxy(tmp_path) as (proxy, cert), llm.serve() as llm_url:
        env = bot_env(proxy, cert, llm_url, database_url)
        with running_bot(env, tmp_path, "first", platform="discord") as first:
            wait_until(discord.connected, "the gateway connected")
            for number, text in enumerate(said):
                user = 100 + number % USERS
                discord.say(text, user_id=user, channel_id=user)  # a direct message
            wait_until(lambda: len(discord.posted) >= 3, "three answers before the kill")
            first.kill()
        assert len(discord.posted) < len(said)  # the kill came while answering
        with running_bot(env, tmp_path, "second", platform="discord") as second:
            second.wait_for("reading and answering")
            wait_until(lambda: all(answers(discord, text) for text in said), "every answer")
    counts = {text: answers(discord, text) for text in said}
    assert all(count >= 1 for count in counts.values()), counts
    assert sum(count - 1 for count in counts.values()) <= 1, counts


def test_a_clean_restart_answers_nothing_twice_and_catches_up(
    tmp_path: Path, database_url: str
) -> None:
    discord = DiscordServer()
    llm = ScriptedOpenAI()
    llm.respond_with(Brain())
    with discord.serve_behind_proxy(tmp_path) as (proxy, cert), llm.serve() as llm_url:
        env = bot_env(proxy, cert, llm_url, database_url)
        with running_bot(env, tmp_path, "first", platform="discord") as first:
            wait_until(discord.connected, "the gateway connected")
            for user in range(3):
                discord.say(f"hello from {user}", user_id=200 + user, channel_id=200 + user)
            discord.say("we are in a server", user_id=9, channel_id=CHANNEL, guild_id=GUILD)
            wait_until(lambda: len(discord.posted) == 3, "three answers")
            first.terminate()
        # Said while no process runs: the gateway never replays it; the history does.
        discord.say("while you were away", user_id=200, channel_id=200)
        with running_bot(env, tmp_path, "second", platform="discord") as second:
            second.wait_for("reading and answering")
            wait_until(discord.connected, "the gateway connected again")
            wait_until(lambda: answers(discord, "while you were away") == 1, "the catch-up")
            discord.say("one more", user_id=201, channel_id=201)
            wait_until(lambda: answers(discord, "one more") == 1, "the new message answered")
    assert [answers(discord, f"hello from {user}") for user in range(3)] == [1, 1, 1]
    assert len(discord.posted) == 5
    assert not any("server" in str(posted.body.get("content")) for posted in discord.posted)
