"""The Discord side of a chat bot, over discord.py's ``Client``: read, send, type.

The gateway pushes messages; the core reads in cycles (:mod:`liz.connectors.bot`).
So messages wait here in memory until a read hands them over, and stay offered
until the next read confirms the core stored them (its cursor moved): a database
failure in between offers them again. A message that arrived while no process
ran is never pushed: the first read after start reads the history of each channel
in the stored cursor after its last seen id.

Sending is a reply to the message answered, allowed to mention its author and
nothing else (no ``@everyone``, roles or other users, whatever the model writes).
discord.py's exceptions become :mod:`liz.connectors.errors` here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
import discord

from liz.connectors.errors import (
    ConnectorAuthError,
    ConnectorError,
    ConnectorRateLimited,
    ConnectorRejected,
    ConnectorUnavailable,
)
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
from liz.errors import UsageError

logger = logging.getLogger(__name__)
T = TypeVar("T")

TOKEN_MISSING = (
    "no Discord bot token: set DISCORD_BOT_TOKEN to the token of your application's bot "
    "(https://discord.com/developers/applications, Bot > Reset Token)"
)
TOKEN_REFUSED = "Discord refused the bot token: check DISCORD_BOT_TOKEN"
INTENT_REFUSED = (
    "Discord refused the gateway intents: turn on Message Content Intent under Bot > "
    "Privileged Gateway Intents in the developer portal"
)
# The reply pings its author through the reply itself, and nobody else.
ONLY_THE_AUTHOR = discord.AllowedMentions(
    everyone=False, users=False, roles=False, replied_user=True
)
# The newest messages read per channel when catching up after a stop.
CATCH_UP_LIMIT = 100
_READY_SECONDS = 60.0


class _Gateway(discord.Client):
    """A client that hands each message it receives to ``received``."""

    def __init__(self, received: Callable[[DiscordMessage], None], **options: Any) -> None:
        super().__init__(**options)
        self._received_by_liz = received

    async def on_message(self, message: discord.Message) -> None:
        self._received_by_liz(fields_of(message, in_server=message.guild is not None))


def fields_of(message: discord.Message, *, in_server: bool) -> DiscordMessage:
    """What :mod:`liz.discord.messages` needs of a discord.py message."""
    reference = message.reference
    replied = reference.resolved if reference is not None else None
    return DiscordMessage(
        id=message.id,
        channel_id=message.channel.id,
        author_id=message.author.id,
        author_is_bot=message.author.bot,
        content=message.content,
        in_server=in_server,
        mentioned_ids=frozenset(user.id for user in message.mentions),
        replied_author_id=replied.author.id if isinstance(replied, discord.Message) else None,
        names={user.id: user.display_name for user in message.mentions},
    )


class DiscordPlatform:
    """One Discord bot, as :class:`liz.connectors.platform.ChatPlatform` needs it."""

    name = "discord"

    def __init__(self, settings: DiscordSettings) -> None:
        if settings.bot_token is None:
            raise UsageError(TOKEN_MISSING)
        self._token = settings.bot_token.get_secret_value()
        self._settings = settings
        self._me: BotIdentity | None = None
        self._reads_content = True
        self._client: _Gateway | None = None
        self._gateway: asyncio.Task[None] | None = None
        self._caught_up = False
        self._arrived: list[DiscordMessage] = []
        self._wake = asyncio.Event()
        # The last batch handed over, until a read shows its cursor was stored.
        self._offered: tuple[str, list[DiscordMessage]] | None = None

    async def identify(self) -> BotIdentity:
        """Log in, log who the bot is, and whether it may read server messages."""
        probe = discord.Client(intents=discord.Intents.none())
        try:
            await self._call(probe.login(self._token))
            user = probe.user
            info = await self._call(probe.application_info())
        finally:
            await probe.close()
        if user is None:
            raise ConnectorUnavailable("Discord did not say who the bot is")
        self._me = BotIdentity(id=str(user.id), username=user.name)
        flags = info.flags
        self._reads_content = flags.gateway_message_content or flags.gateway_message_content_limited
        if not self._reads_content:
            logger.warning(
                "@%s has the Message Content intent off: in servers it reads only messages "
                "that mention it (turn it on under Bot > Privileged Gateway Intents in the "
                "developer portal to answer replies too); direct messages are not affected",
                self._me.username,
            )
        return self._me

    async def read(self, after: str | None) -> Batch:
        me = self._me or await self.identify()
        seen = read_cursor(after)
        if self._offered is not None:
            position, offered = self._offered
            self._offered = None
            if after != position:  # not stored: offer them again
                self._arrived[:0] = offered
        await self._connected()
        if not self._caught_up:
            self._arrived[:0] = await self._history_after(seen)
            self._caught_up = True
        if not self._arrived:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._settings.poll_timeout)
        self._wake.clear()
        self._raise_if_gateway_stopped()
        read = _unique(self._arrived)
        self._arrived = []
        if not read:
            return Batch(position=None)
        position = write_cursor(moved_cursor(seen, read))
        self._offered = (position, read)
        answer = [to_answer(m, me, allowed_users=self._settings.allowed_users) for m in read]
        return Batch(position=position, messages=[found for found in answer if found is not None])

    async def send(self, chat_id: str, text: str, *, reply_to: str | None) -> str:
        client = await self._logged_in()
        channel = client.get_partial_messageable(int(chat_id))
        if reply_to is None:
            sending = channel.send(text, allowed_mentions=ONLY_THE_AUTHOR)
        else:
            reference = discord.MessageReference(
                message_id=int(reply_to), channel_id=int(chat_id), fail_if_not_exists=False
            )
            sending = channel.send(text, reference=reference, allowed_mentions=ONLY_THE_AUTHOR)
        sent = await self._call(sending)
        return str(sent.id)

    async def typing(self, chat_id: str) -> None:
        client = await self._logged_in()
        channel = client.get_partial_messageable(int(chat_id))

        async def typing_once() -> None:
            await channel.typing()

        await self._call(typing_once())

    def split(self, text: str) -> list[str]:
        return split(text)

    async def aclose(self) -> None:
        if self._client is not None:
            with contextlib.suppress(discord.DiscordException, aiohttp.ClientError, OSError):
                await self._client.close()
        if self._gateway is not None:
            self._gateway.cancel()
            await asyncio.gather(self._gateway, return_exceptions=True)

    def _received(self, message: DiscordMessage) -> None:
        self._arrived.append(message)
        self._wake.set()

    async def _logged_in(self) -> _Gateway:
        """The client, logged in over HTTP (sending needs no gateway)."""
        if self._client is None:
            intents = discord.Intents.none()
            intents.guilds = True
            intents.guild_messages = True
            intents.dm_messages = True
            # Asking for an intent the portal has off would get the gateway refused.
            intents.message_content = self._reads_content
            client = _Gateway(self._received, intents=intents)
            await self._call(client.login(self._token))
            self._client = client
        return self._client

    async def _connected(self) -> None:
        """Connect the gateway once, and wait until it is ready."""
        client = await self._logged_in()
        if self._gateway is None:
            self._gateway = asyncio.create_task(client.connect(reconnect=True))
        ready = asyncio.ensure_future(client.wait_until_ready())
        done, _ = await asyncio.wait(
            {ready, self._gateway}, timeout=_READY_SECONDS, return_when=asyncio.FIRST_COMPLETED
        )
        if ready not in done:
            ready.cancel()
        self._raise_if_gateway_stopped()
        if ready not in done:
            raise ConnectorUnavailable("the Discord gateway is not ready yet")

    def _raise_if_gateway_stopped(self) -> None:
        gateway = self._gateway
        if gateway is None or not gateway.done():
            return
        self._gateway = None
        exc = None if gateway.cancelled() else gateway.exception()
        if isinstance(exc, ConnectorError):
            raise exc
        if isinstance(exc, Exception):
            raise translated(exc) from None
        raise ConnectorUnavailable("the Discord gateway closed")

    async def _history_after(self, seen: dict[int, int]) -> list[DiscordMessage]:
        """What each channel in the cursor received after its last seen message."""
        client = await self._logged_in()
        missed: list[DiscordMessage] = []
        for channel_id, last in seen.items():
            try:
                channel = await self._call(client.fetch_channel(channel_id))
                if not isinstance(channel, discord.abc.Messageable):
                    continue
                in_server = not isinstance(channel, discord.abc.PrivateChannel)
                history = channel.history(
                    after=discord.Object(id=last), oldest_first=True, limit=CATCH_UP_LIMIT
                )
                found = await self._call(_listed(history))
                missed.extend(fields_of(message, in_server=in_server) for message in found)
            except ConnectorRejected as exc:  # the channel is gone, or hidden from the bot
                logger.info("discord: cannot read channel %s's history: %s", channel_id, exc)
        if missed:
            logger.info("discord: %d message(s) arrived while the bot was stopped", len(missed))
        return missed

    async def _call(self, work: Awaitable[T]) -> T:
        try:
            return await work
        except (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise translated(exc) from None


def translated(exc: BaseException) -> ConnectorError:
    """A discord.py (or network) failure as the connector loop handles it."""
    if isinstance(exc, discord.LoginFailure):
        return ConnectorAuthError(TOKEN_REFUSED)
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        return ConnectorAuthError(INTENT_REFUSED)
    if isinstance(exc, discord.ConnectionClosed) and exc.code == 4004:
        return ConnectorAuthError(TOKEN_REFUSED)
    if isinstance(exc, discord.RateLimited):
        return ConnectorRateLimited("Discord asks to wait", retry_after=exc.retry_after)
    if isinstance(exc, discord.Forbidden | discord.NotFound):
        return ConnectorRejected(f"Discord refused the call: {exc}")
    return ConnectorUnavailable(f"cannot reach Discord: {exc or type(exc).__name__}")


async def _listed(messages: AsyncIterator[discord.Message]) -> list[discord.Message]:
    return [message async for message in messages]


def _unique(messages: list[DiscordMessage]) -> list[DiscordMessage]:
    """Each message once (history and the gateway may both bring one), oldest first."""
    by_key = {(message.channel_id, message.id): message for message in messages}
    return sorted(by_key.values(), key=lambda message: message.id)
