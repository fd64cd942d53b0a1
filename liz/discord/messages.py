"""Which Discord messages the bot answers, what each says to the agent, and the cursor.

Plain data in, plain data out, so each rule is tested without a gateway:

- a direct message is answered;
- in a server channel, only a message that mentions the bot or replies to one of
  its own messages; the rest of the channel's talk is read and left alone;
- bots (the bot itself included) are never answered, nor a message without text
  (an image alone, a sticker), nor, with an allowlist, anyone not on it.

The reply is always sent as a reply to the message it answers. Mentions in the text
become ``@name`` so the agent reads what people see.

The cursor is the last message id seen in each channel the bot recently read, kept
in the database with the messages (:mod:`liz.connectors.inbox`): the gateway never
replays what it sent while the bot was down, so a restart reads each of those
channels' history after its id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from liz.connectors.platform import BotIdentity, Incoming
from liz.connectors.splitting import split_message

# Discord refuses a message over 2,000 characters.
MAX_MESSAGE_LENGTH = 2000
# How many channels the cursor remembers, the most recently active first.
CURSOR_CHANNELS = 50

_MENTION = re.compile(r"<@!?(\d+)>")


@dataclass(frozen=True)
class DiscordMessage:
    """The fields of a Discord message that decide whether and what the bot answers."""

    id: int
    channel_id: int
    author_id: int
    author_is_bot: bool
    content: str
    in_server: bool  # False: a direct message
    mentioned_ids: frozenset[int] = frozenset()
    # The author of the message this one replies to, if it is a reply.
    replied_author_id: int | None = None
    # Display names of the users mentioned, by id, to write ``<@id>`` as ``@name``.
    names: Mapping[int, str] = field(default_factory=dict)


def to_answer(
    message: DiscordMessage, me: BotIdentity, *, allowed_users: Collection[int]
) -> Incoming | None:
    """The message to answer, or None when the bot leaves it alone."""
    if message.author_is_bot:
        return None
    if allowed_users and message.author_id not in allowed_users:
        return None
    if message.in_server and not _addressed(message, me):
        return None
    text = readable(message, me)
    if not text:
        return None
    channel = str(message.channel_id)
    return Incoming(
        message_key=f"{channel}:{message.id}",
        sequence=message.id,  # snowflakes grow with time: the order of arrival
        user_id=f"discord:{message.author_id}",
        room_id=f"discord:{channel}",
        chat_id=channel,
        text=text,
        reply_to=str(message.id),
    )


def _addressed(message: DiscordMessage, me: BotIdentity) -> bool:
    return int(me.id) in message.mentioned_ids or (
        message.replied_author_id is not None and str(message.replied_author_id) == me.id
    )


def readable(message: DiscordMessage, me: BotIdentity) -> str:
    """The text as people see it: ``<@id>`` written ``@name``, stripped."""

    def name(match: re.Match[str]) -> str:
        user = int(match[1])
        if str(user) == me.id:
            return f"@{me.username}"
        return f"@{message.names[user]}" if user in message.names else match[0]

    return _MENTION.sub(name, message.content).strip()


def split(text: str) -> list[str]:
    """The reply in messages under Discord's limit, cut at paragraph or sentence ends."""
    return split_message(text, MAX_MESSAGE_LENGTH)


def read_cursor(position: str | None) -> dict[int, int]:
    """The last message id seen per channel, from the stored cursor (empty before any)."""
    if not position:
        return {}
    try:
        data = json.loads(position)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {int(channel): int(last) for channel, last in data.items()}


def moved_cursor(seen: Mapping[int, int], messages: Iterable[DiscordMessage]) -> dict[int, int]:
    """``seen`` moved past ``messages``: the newest id per channel, for the most recently
    active channels."""
    moved = dict(seen)
    for message in messages:
        moved[message.channel_id] = max(message.id, moved.get(message.channel_id, 0))
    newest = sorted(moved.items(), key=lambda item: item[1], reverse=True)[:CURSOR_CHANNELS]
    return dict(newest)


def write_cursor(seen: Mapping[int, int]) -> str:
    return json.dumps({str(channel): last for channel, last in seen.items()}, sort_keys=True)
