"""The Discord side of a chat bot: what the connector core reads, sends and shows.

The gateway pushes messages while the core reads in cycles
(:mod:`liz.connectors.bot`). So messages wait here in memory until a read hands
them over, and stay offered until the next read confirms the core stored them
(the cursor it passes moved): a database failure in between offers them again.
The gateway never replays what it sent while no process ran, so the first read
after start reads the history of each channel in the stored cursor after its last
seen id, and stores it through the same inbox.

Discord itself is reached through a :class:`DiscordWire`: discord.py in
production (:class:`liz.discord.gateway.DiscordGateway`), a fake in tests
(:class:`liz.testing.fake_discord.FakeDiscord`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from liz.connectors.errors import ConnectorRejected
from liz.connectors.platform import Batch, BotIdentity
from liz.discord.messages import (
    DiscordMessage,
    moved_cursor,
    read_cursor,
    split,
    to_answer,
    write_cursor,
)
from liz.discord.settings import DiscordSettings

logger = logging.getLogger(__name__)

NONCE_LENGTH = 25  # the longest nonce Discord takes

TOKEN_MISSING = (
    "no Discord bot token: set DISCORD_BOT_TOKEN to the token of your application's bot "
    "(https://discord.com/developers/applications, Bot > Reset Token)"
)


@dataclass(frozen=True)
class Login:
    """Who the bot is, and whether Discord lets it read server messages' text."""

    identity: BotIdentity
    reads_content: bool  # the Message Content intent is on in the developer portal


class DiscordWire(Protocol):
    """Discord as the bot needs it. Failures are :mod:`liz.connectors.errors`."""

    async def login(self) -> Login:
        """Check the token (:class:`ConnectorAuthError` when refused)."""
        ...

    async def connect(self, deliver: Callable[[DiscordMessage], None]) -> None:
        """Connect the gateway once, wait until it is ready, and hand each message it
        pushes to ``deliver``; raise if it stopped."""
        ...

    async def history(self, channel_id: int, after: int) -> list[DiscordMessage]:
        """The channel's messages after the message id ``after``, oldest first."""
        ...

    async def send(self, channel_id: int, text: str, *, reply_to: int | None, nonce: str) -> str:
        """Send ``text`` as a reply to ``reply_to``; the id of the message sent. A second
        send with the same ``nonce`` within minutes gets the first message back, and
        posts nothing (Discord's ``enforce_nonce``)."""
        ...

    async def typing(self, channel_id: int) -> None: ...

    async def close(self) -> None: ...


class DiscordPlatform:
    """One Discord bot, as :class:`liz.connectors.platform.ChatPlatform` needs it."""

    name = "discord"

    def __init__(self, settings: DiscordSettings, wire: DiscordWire) -> None:
        self._settings = settings
        self._wire = wire
        self._me: BotIdentity | None = None
        self._caught_up = False
        self._arrived: list[DiscordMessage] = []
        self._wake = asyncio.Event()
        # The last batch handed over, until a read shows its cursor was stored.
        self._offered: tuple[str, list[DiscordMessage]] | None = None

    async def identify(self) -> BotIdentity:
        login = await self._wire.login()
        self._me = login.identity
        if not login.reads_content:
            logger.warning(
                "@%s has the Message Content intent off: in servers it reads only messages "
                "that mention it; turn it on under Bot > Privileged Gateway Intents in the "
                "developer portal (direct messages are not affected)",
                self._me.username,
            )
        return self._me

    async def read(self, after: str | None) -> Batch:
        me = self._me or await self.identify()
        seen = read_cursor(after)
        if self._offered is not None:
            position, offered = self._offered
            self._offered = None
            if after != position:  # the core did not store them: offer them again
                self._arrived[:0] = offered
        await self._wire.connect(self._deliver)
        if not self._caught_up:
            self._arrived[:0] = await self._missed(seen)
            self._caught_up = True
        if not self._arrived:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._settings.poll_timeout)
        self._wake.clear()
        read = _unique(self._arrived)
        self._arrived = []
        if not read:
            return Batch(position=None)
        position = write_cursor(moved_cursor(seen, read))
        self._offered = (position, read)
        allowed = self._settings.allowed_users
        found = [to_answer(message, me, allowed_users=allowed) for message in read]
        return Batch(position=position, messages=[m for m in found if m is not None])

    async def send(self, chat_id: str, text: str, *, reply_to: str | None, key: str) -> str:
        quoted = None if reply_to is None else int(reply_to)
        return await self._wire.send(int(chat_id), text, reply_to=quoted, nonce=nonce_of(key))

    async def typing(self, chat_id: str) -> None:
        await self._wire.typing(int(chat_id))

    def split(self, text: str) -> list[str]:
        return split(text)

    async def aclose(self) -> None:
        await self._wire.close()

    def _deliver(self, message: DiscordMessage) -> None:
        self._arrived.append(message)
        self._wake.set()

    async def _missed(self, seen: dict[int, int]) -> list[DiscordMessage]:
        """What each channel in the cursor received after its last seen message."""
        missed: list[DiscordMessage] = []
        for channel_id, last in seen.items():
            try:
                missed.extend(await self._wire.history(channel_id, last))
            except ConnectorRejected as exc:  # the channel is gone, or hidden from the bot
                logger.info("discord: cannot read channel %s's history: %s", channel_id, exc)
        if missed:
            logger.info("discord: %d message(s) arrived while the bot was stopped", len(missed))
        return missed


def nonce_of(key: str) -> str:
    """The nonce of a reply's part: the same at every attempt, and within the 25
    characters Discord takes."""
    return hashlib.sha256(key.encode()).hexdigest()[:NONCE_LENGTH]


def _unique(messages: list[DiscordMessage]) -> list[DiscordMessage]:
    """Each message once (history and the gateway may both bring one), oldest first."""
    by_key = {(message.channel_id, message.id): message for message in messages}
    return sorted(by_key.values(), key=lambda message: message.id)
