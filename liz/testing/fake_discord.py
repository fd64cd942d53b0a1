"""A fake Discord, for testing a bot without Discord.

``FakeDiscord`` stands where discord.py stands (:class:`liz.discord.platform.DiscordWire`):
it keeps every channel's history, pushes a message said while the bot's gateway is
connected (never one said while it is not, as Discord's gateway), answers history
reads after a message id, and records what the bot sent and where it showed
"typing". Like Discord, it refuses a message over 2,000 characters, and a send with
a nonce it saw gets the first message back and posts nothing (``enforce_nonce``).

Example::

    discord = FakeDiscord(username="liz_bot")
    discord.say("hello", user_id=7)                              # a direct message
    discord.say("what is a margin?", user_id=8, channel_id=300, mention=True)
    platform = DiscordPlatform(DiscordSettings(bot_token="x"), discord)
    ...
    assert discord.sent[0].reply_to == ...
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from liz.connectors.errors import ConnectorAuthError, ConnectorRejected, ConnectorUnavailable
from liz.connectors.platform import BotIdentity
from liz.discord.messages import MAX_MESSAGE_LENGTH, DiscordMessage
from liz.discord.platform import Login

SERVER_CHANNEL = 300


@dataclass(frozen=True)
class SentMessage:
    """A message the bot sent."""

    channel_id: int
    text: str
    message_id: int
    reply_to: int | None


class FakeDiscord:
    """Discord's gateway and REST calls, in memory, for one bot."""

    def __init__(
        self,
        *,
        bot_id: int = 4242,
        username: str = "liz_test_bot",
        token_accepted: bool = True,
        reads_content: bool = True,
    ) -> None:
        self.me = BotIdentity(id=str(bot_id), username=username)
        self.token_accepted = token_accepted
        self.reads_content = reads_content
        self.channels: dict[int, list[DiscordMessage]] = {}
        self.sent: list[SentMessage] = []
        self.typing_in: list[int] = []
        self.connections = 0  # gateway connections made
        self._deliver: Callable[[DiscordMessage], None] | None = None
        self._ids = itertools.count(10_000_000)
        self._by_nonce: dict[str, SentMessage] = {}
        # Sends whose answer is lost: Discord posts the message, the bot hears an error.
        self.answers_lost = 0

    def say(
        self,
        text: str,
        *,
        user_id: int,
        channel_id: int | None = None,
        mention: bool = False,
        reply_to_bot: bool = False,
        from_bot: bool = False,
        names: dict[int, str] | None = None,
    ) -> DiscordMessage:
        """A person writes ``text``: in a direct message, or in the server channel
        ``channel_id``, mentioning the bot first when ``mention``."""
        bot = int(self.me.id)
        content = f"<@{bot}> {text}" if mention else text
        mentioned = {bot} if mention or reply_to_bot else set()
        message = DiscordMessage(
            id=next(self._ids),
            channel_id=channel_id if channel_id is not None else 900_000 + user_id,
            author_id=user_id,
            author_is_bot=from_bot,
            content=content,
            in_server=channel_id is not None,
            mentioned_ids=frozenset(mentioned | set(names or {})),
            replied_author_id=bot if reply_to_bot else None,
            names={bot: self.me.username, **(names or {})},
        )
        self.channels.setdefault(message.channel_id, []).append(message)
        if self._deliver is not None:
            self._deliver(message)
        return message

    @property
    def connected(self) -> bool:
        """Whether a bot's gateway is connected: only then is what people say pushed."""
        return self._deliver is not None

    def sent_to(self, channel_id: int) -> list[str]:
        return [message.text for message in self.sent if message.channel_id == channel_id]

    # DiscordWire

    async def login(self) -> Login:
        if not self.token_accepted:
            raise ConnectorAuthError("Discord refused the bot token: check DISCORD_BOT_TOKEN")
        return Login(self.me, self.reads_content)

    async def connect(self, deliver: Callable[[DiscordMessage], None]) -> None:
        if self._deliver is None:
            self.connections += 1
        self._deliver = deliver

    async def history(self, channel_id: int, after: int) -> list[DiscordMessage]:
        return [message for message in self.channels.get(channel_id, []) if message.id > after]

    async def send(self, channel_id: int, text: str, *, reply_to: int | None, nonce: str) -> str:
        if len(text) > MAX_MESSAGE_LENGTH:
            raise ConnectorRejected("Discord refused the call: 400 Bad Request (content too long)")
        if nonce in self._by_nonce:  # enforce_nonce: the first message back, nothing posted
            return str(self._by_nonce[nonce].message_id)
        sent = SentMessage(channel_id, text, next(self._ids), reply_to)
        self.sent.append(sent)
        self._by_nonce[nonce] = sent
        if self.answers_lost:
            self.answers_lost -= 1
            raise ConnectorUnavailable("cannot reach Discord: the connection was reset")
        return str(sent.message_id)

    async def typing(self, channel_id: int) -> None:
        self.typing_in.append(channel_id)

    async def close(self) -> None:
        self._deliver = None  # the process stopped: the gateway pushes to nobody
