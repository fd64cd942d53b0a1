"""Which Discord messages the bot answers and what each says; the split; the cursor;
discord.py's errors as the connector loop sees them."""

from __future__ import annotations

import re

import discord
import pytest

from liz.connectors.errors import ConnectorAuthError, ConnectorRateLimited, ConnectorRejected
from liz.connectors.platform import BotIdentity
from liz.discord.gateway import ONLY_THE_AUTHOR, translated
from liz.discord.messages import (
    CURSOR_CHANNELS,
    DiscordMessage,
    moved_cursor,
    read_cursor,
    split,
    to_answer,
    write_cursor,
)

ME = BotIdentity(id="4242", username="liz_bot")


def message(content: str, **fields: object) -> DiscordMessage:
    values: dict[str, object] = {
        "id": 1001,
        "channel_id": 77,
        "author_id": 8,
        "author_is_bot": False,
        "content": content,
        "in_server": False,
    }
    return DiscordMessage(**{**values, **fields})  # type: ignore[arg-type]


def test_a_direct_message_is_answered_as_a_reply_by_its_author_in_its_channel() -> None:
    found = to_answer(message("hello there"), ME, allowed_users=[])
    assert found is not None
    assert (found.user_id, found.room_id, found.chat_id) == ("discord:8", "discord:77", "77")
    assert (found.text, found.reply_to, found.message_key) == ("hello there", "1001", "77:1001")


def test_in_a_server_only_a_mention_or_a_reply_to_the_bot_is_answered() -> None:
    def answered(content: str, **fields: object) -> str | None:
        found = to_answer(message(content, in_server=True, **fields), ME, allowed_users=[])
        return None if found is None else found.text

    assert answered("we were talking about lunch") is None
    assert answered("<@999> what do you think?", mentioned_ids=frozenset({999})) is None
    assert answered("and a markup?", replied_author_id=999) is None
    assert answered("<@4242> what is a margin?", mentioned_ids=frozenset({4242})) == (
        "@liz_bot what is a margin?"
    )
    assert answered("and a markup?", replied_author_id=4242) == "and a markup?"


def test_bots_empty_messages_and_people_off_the_allowlist_are_left_alone() -> None:
    assert to_answer(message("hi", author_is_bot=True), ME, allowed_users=[]) is None
    assert to_answer(message("   "), ME, allowed_users=[]) is None  # an image alone
    assert to_answer(message("hi", author_id=8), ME, allowed_users=[7]) is None
    assert to_answer(message("hi", author_id=7), ME, allowed_users=[7]) is not None


def test_mentions_of_people_read_as_their_names() -> None:
    said = message(
        "<@4242> ask <@!55> and <@66>",
        in_server=True,
        mentioned_ids=frozenset({4242, 55}),
        names={55: "Grace"},
    )
    found = to_answer(said, ME, allowed_users=[])
    assert found is not None and found.text == "@liz_bot ask @Grace and <@66>"


def test_a_long_reply_is_split_under_2000_at_sentence_ends_with_nothing_lost() -> None:
    paragraph = "This sentence is part of a long answer about pricing. " * 12
    reply = "\n\n".join(f"Part {n}. {paragraph}" for n in range(10))
    parts = split(reply)
    assert len(parts) >= 4
    assert all(len(part) <= 2000 for part in parts)
    assert all(part.endswith(".") for part in parts)
    assert re.sub(r"\s", "", "".join(parts)) == re.sub(r"\s", "", reply)
    assert split("  ") == []


def test_the_cursor_keeps_the_newest_id_per_recent_channel() -> None:
    assert read_cursor(None) == {} and read_cursor("") == {}
    seen = moved_cursor({}, [message("a", id=5, channel_id=1), message("b", id=9, channel_id=1)])
    seen = moved_cursor(seen, [message("c", id=7, channel_id=2)])
    assert read_cursor(write_cursor(seen)) == {1: 9, 2: 7}
    many = moved_cursor(seen, [message("x", id=100 + n, channel_id=10 + n) for n in range(60)])
    assert len(many) == CURSOR_CHANNELS
    assert 10 + 59 in many and 1 not in many  # the least recently active channels go first


def test_a_reply_may_mention_its_author_and_nobody_else() -> None:
    allowed = ONLY_THE_AUTHOR.to_dict()
    assert allowed["parse"] == [] and allowed["replied_user"] is True


@pytest.mark.parametrize(
    ("error", "kind", "text"),
    [
        (discord.LoginFailure("Improper token"), ConnectorAuthError, "DISCORD_BOT_TOKEN"),
        (discord.PrivilegedIntentsRequired(None), ConnectorAuthError, "Message Content Intent"),
        (discord.RateLimited(3.5), ConnectorRateLimited, "wait"),
    ],
)  # fmt: skip
def test_discord_errors_become_the_loops_own(
    error: Exception, kind: type[Exception], text: str
) -> None:
    found = translated(error)
    assert isinstance(found, kind) and text in found.message
    if isinstance(found, ConnectorRateLimited):
        assert found.wait_seconds == 3.5


def test_a_refused_call_is_rejected_for_good() -> None:
    class Response:  # what discord.py reads of an aiohttp response to build its error
        status = 403
        reason = "Forbidden"

    refused = discord.Forbidden(Response(), {"code": 50013, "message": "Missing Permissions"})  # type: ignore[arg-type]
    assert isinstance(translated(refused), ConnectorRejected)
