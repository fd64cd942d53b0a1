"""What the connector core needs of a chat platform: read, send, show typing, split.

A platform module (``liz.telegram``) implements :class:`ChatPlatform` over its
library; the core (:mod:`liz.connectors.bot`) holds the loop, the database and the
turn, so every platform keeps the same promises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class BotIdentity:
    """Who the bot is on its platform, as the platform told it at start."""

    id: str
    username: str


@dataclass(frozen=True)
class Incoming:
    """One message the bot will answer, in the platform's own ids."""

    message_key: str  # unique per bot: "<chat id>:<message id>"
    sequence: int  # the platform's order of arrival (Telegram's update id)
    user_id: str  # "<platform>:<user id>": each person's facts are their own
    room_id: str  # "<platform>:<chat id>": a group's conversation is shared
    chat_id: str
    text: str
    reply_to: str | None = None  # the message the reply quotes (groups), if any


@dataclass(frozen=True)
class Batch:
    """What one read brought: the messages to answer, and the cursor past all it read.

    Messages not to answer (a group chat not addressed to the bot, a sticker) move
    the cursor too: they are read once and never looked at again.
    """

    position: str | None  # None: nothing new was read
    messages: list[Incoming] = field(default_factory=list)


class ChatPlatform(Protocol):
    """One bot's connection to its platform."""

    @property
    def name(self) -> str:
        """The platform's name in ids and logs: ``telegram``."""
        ...

    async def identify(self) -> BotIdentity:
        """Check the token with the platform; who the bot is.

        Raises :class:`liz.connectors.errors.ConnectorAuthError` when it is refused.
        """
        ...

    async def read(self, after: str | None) -> Batch:
        """The messages after the cursor ``after`` (waiting a while for one to come)."""
        ...

    async def send(self, chat_id: str, text: str, *, reply_to: str | None, key: str) -> str:
        """Send one part of a reply; the platform's id for the message sent.

        ``key`` is the same at every attempt at this part and differs between parts: a
        platform that recognises a repeat by it (Discord's nonce) posts the part once,
        however often it is sent.
        """
        ...

    async def typing(self, chat_id: str) -> None:
        """Show that the bot is writing, for a few seconds."""
        ...

    def split(self, text: str) -> list[str]:
        """The reply in parts the platform takes, nothing lost; none for an empty reply."""
        ...

    async def aclose(self) -> None:
        """Close the platform's connections."""
        ...
