"""Discord through discord.py: the one module of liz that imports it.

Sending is a reply to the message answered, allowed to mention its author and
nothing else (no ``@everyone``, roles or other users, whatever the model writes).
A message that arrived while no process ran is never pushed by the gateway; the
history of a channel after a message id is read with the channel's ``history``.
discord.py's exceptions become :mod:`liz.connectors.errors` here.

The rules (:mod:`liz.discord.messages`) take plain :class:`DiscordMessage` data,
turned from discord.py's objects by :func:`fields_of`: discord.py builds a
``Message`` only from its connection state, so plain data is what tests can write.
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
from liz.connectors.platform import BotIdentity
from liz.discord.messages import DiscordMessage
from liz.discord.platform import Login

logger = logging.getLogger(__name__)
T = TypeVar("T")

TOKEN_REFUSED = "Discord refused the bot token: check DISCORD_BOT_TOKEN"
INTENT_REFUSED = (
    "Discord refused the gateway intents: turn on Message Content Intent under Bot > "
    "Privileged Gateway Intents in the developer portal"
)
# The reply pings its author through the reply itself, and nobody else.
ONLY_THE_AUTHOR = discord.AllowedMentions(
    everyone=False, users=False, roles=False, replied_user=True
)
_READY_SECONDS = 60.0


class _Gateway(discord.Client):
    """A client that hands each message it receives to ``received``."""

    def __init__(self, received: Callable[[DiscordMessage], None], **options: Any) -> None:
        super().__init__(**options)
        self._received_by_liz = received

    async def on_message(self, message: discord.Message) -> None:
        # A server's channel not in discord.py's cache is a PartialMessageable: not private.
        private = isinstance(message.channel, discord.abc.PrivateChannel)
        self._received_by_liz(fields_of(message, in_server=not private))


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


class DiscordGateway:
    """Discord through discord.py: log in, the gateway's messages, history, send, type.

    :class:`liz.discord.platform.DiscordPlatform` holds what the bot does with them.
    """

    def __init__(
        self,
        token: str,
        *,
        connector: Callable[[], aiohttp.BaseConnector] | None = None,
        proxy: str | None = None,
    ) -> None:
        """``connector`` makes each client's aiohttp connector (tests reach a fake
        Discord through one); by default, discord.py's own. ``proxy``: an HTTP proxy
        for every call, REST and gateway."""
        self._token = token
        self._connector = connector
        self._proxy = proxy
        self._client: _Gateway | None = None
        self._gateway: asyncio.Task[None] | None = None
        self._deliver: Callable[[DiscordMessage], None] | None = None
        self._reads_content = True

    async def login(self) -> Login:
        """Check the token; who the bot is and whether it may read server messages."""
        probe = discord.Client(intents=_intents(reads_content=False), **self._options())
        try:
            await _call(probe.login(self._token))
            user = probe.user
            info = await _call(probe.application_info())
        finally:
            await probe.close()
        if user is None:
            raise ConnectorUnavailable("Discord did not say who the bot is")
        flags = info.flags
        self._reads_content = flags.gateway_message_content or flags.gateway_message_content_limited
        return Login(BotIdentity(id=str(user.id), username=user.name), self._reads_content)

    async def connect(self, deliver: Callable[[DiscordMessage], None]) -> None:
        """Connect the gateway once, and wait until it is ready; raise if it stopped."""
        self._deliver = deliver
        client = await self._logged_in()
        if self._gateway is None:
            self._gateway = asyncio.create_task(client.connect(reconnect=True))
        ready = asyncio.ensure_future(client.wait_until_ready())
        done, _ = await asyncio.wait(
            {ready, self._gateway}, timeout=_READY_SECONDS, return_when=asyncio.FIRST_COMPLETED
        )
        if ready not in done:
            ready.cancel()
        self._raise_if_stopped()
        if ready not in done:
            raise ConnectorUnavailable("the Discord gateway is not ready yet")

    async def history(self, channel_id: int, after: int) -> list[DiscordMessage]:
        """The channel's messages after ``after``, oldest first: all of them, read in
        pages, since the cursor moves past the newest read and would skip any left."""
        client = await self._logged_in()
        channel = await _call(client.fetch_channel(channel_id))
        if not isinstance(channel, discord.abc.Messageable):
            return []
        in_server = not isinstance(channel, discord.abc.PrivateChannel)
        history = channel.history(after=discord.Object(id=after), oldest_first=True, limit=None)
        found = await _call(_listed(history))
        return [fields_of(message, in_server=in_server) for message in found]

    async def send(self, channel_id: int, text: str, *, reply_to: int | None, nonce: str) -> str:
        client = await self._logged_in()
        channel = client.get_partial_messageable(channel_id)
        # discord.py sends a nonce with enforce_nonce: a repeat gets the first message back.
        if reply_to is None:
            sending = channel.send(text, allowed_mentions=ONLY_THE_AUTHOR, nonce=nonce)
        else:
            reference = discord.MessageReference(
                message_id=reply_to, channel_id=channel_id, fail_if_not_exists=False
            )
            sending = channel.send(
                text, reference=reference, allowed_mentions=ONLY_THE_AUTHOR, nonce=nonce
            )
        sent = await _call(sending)
        return str(sent.id)

    async def typing(self, channel_id: int) -> None:
        client = await self._logged_in()
        channel = client.get_partial_messageable(channel_id)

        async def typing_once() -> None:
            await channel.typing()

        await _call(typing_once())

    async def close(self) -> None:
        if self._client is not None:
            with contextlib.suppress(discord.DiscordException, aiohttp.ClientError, OSError):
                await self._client.close()
        if self._gateway is not None:
            self._gateway.cancel()
            await asyncio.gather(self._gateway, return_exceptions=True)

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {} if self._proxy is None else {"proxy": self._proxy}
        if self._connector is not None:
            options["connector"] = self._connector()
        return options

    def _received(self, message: DiscordMessage) -> None:
        if self._deliver is not None:
            self._deliver(message)

    async def _logged_in(self) -> _Gateway:
        """The client, logged in over HTTP (sending needs no gateway)."""
        if self._client is None:
            intents = _intents(reads_content=self._reads_content)
            client = _Gateway(self._received, intents=intents, **self._options())
            await _call(client.login(self._token))
            self._client = client
        return self._client

    def _raise_if_stopped(self) -> None:
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


def _intents(*, reads_content: bool) -> discord.Intents:
    """Messages in servers and direct messages; their text too when the portal allows
    (asking for an intent the portal has off gets the gateway refused)."""
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.dm_messages = True
    intents.message_content = reads_content
    return intents


class QuietVoice(logging.Filter):
    """Drops discord.py's start-up notes about voice support, which a chat bot never uses."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "voice will NOT be supported" not in record.getMessage()


async def _call(work: Awaitable[T]) -> T:
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
