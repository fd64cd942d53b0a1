"""The Telegram side of a chat bot, over python-telegram-bot's ``Bot``: read, send, type.

Requests go to ``{TELEGRAM_API_URL}/bot{token}/{method}``, as a self-hosted Bot API
server expects (and the fake server in :mod:`liz.testing.fake_telegram`). The
library's errors become :mod:`liz.connectors.errors` here, with the token taken
out of their text.
"""

from __future__ import annotations

import datetime as dt
import logging
import warnings
from collections.abc import Awaitable, Callable
from typing import TypeVar

from telegram import Bot, ReplyParameters
from telegram.constants import ChatAction
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Conflict,
    Forbidden,
    InvalidToken,
    RetryAfter,
    TelegramError,
)
from telegram.request import HTTPXRequest
from telegram.warnings import PTBDeprecationWarning

from liz.connectors.errors import (
    ConnectorAuthError,
    ConnectorError,
    ConnectorRateLimited,
    ConnectorRejected,
    ConnectorUnavailable,
)
from liz.connectors.platform import Batch, BotIdentity
from liz.connectors.splitting import split_message
from liz.errors import UsageError
from liz.telegram.redaction import redacted
from liz.telegram.settings import TelegramSettings
from liz.telegram.updates import Greeting, to_answer

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Telegram refuses a longer message (counted in UTF-16 code units).
MAX_MESSAGE_LENGTH = 4096
TOKEN_MISSING = (
    "no Telegram bot token: set TELEGRAM_BOT_TOKEN to the token @BotFather gave your bot"
)


class TelegramPlatform:
    """One Telegram bot, as :class:`liz.connectors.platform.ChatPlatform` needs it."""

    name = "telegram"

    def __init__(self, settings: TelegramSettings, *, greeting: Greeting) -> None:
        if settings.bot_token is None:
            raise UsageError(TOKEN_MISSING)
        self._token = settings.bot_token.get_secret_value()
        self._settings = settings
        self._greeting = greeting
        root = settings.api_url
        self._bot = Bot(
            self._token,
            base_url=f"{root}/bot{{token}}",
            base_file_url=f"{root}/file/bot{{token}}",
            request=HTTPXRequest(connection_pool_size=8),
            # A long poll waits up to poll_timeout before the server answers.
            get_updates_request=HTTPXRequest(read_timeout=settings.poll_timeout + 10.0),
        )
        self._me: BotIdentity | None = None

    async def identify(self) -> BotIdentity:
        me = await self._call(self._bot.get_me)
        self._me = BotIdentity(id=str(me.id), username=me.username or str(me.id))
        if not me.can_read_all_group_messages:
            logger.info(
                "@%s has privacy mode on: in groups it sees only commands, mentions of it "
                "and replies to it (enough to answer them); private chats are not affected",
                self._me.username,
            )
        return self._me

    async def read(self, after: str | None) -> Batch:
        me = self._me or await self.identify()
        offset = None if not after else int(after) + 1
        updates = await self._call(
            lambda: self._bot.get_updates(
                offset=offset,
                timeout=self._settings.poll_timeout,
                allowed_updates=["message"],
            )
        )
        if not updates:
            return Batch(position=None)
        messages = []
        for update in updates:
            found = to_answer(
                update,
                me,
                allowed_users=self._settings.allowed_users,
                greeting=self._greeting,
            )
            if found is not None:
                messages.append(found)
        return Batch(position=str(max(update.update_id for update in updates)), messages=messages)

    async def send(self, chat_id: str, text: str, *, reply_to: str | None, key: str) -> str:
        # The Bot API has no way to recognise a repeat: ``key`` goes unused.
        quoted = (
            None
            if reply_to is None
            else ReplyParameters(message_id=int(reply_to), allow_sending_without_reply=True)
        )
        sent = await self._call(
            lambda: self._bot.send_message(chat_id=int(chat_id), text=text, reply_parameters=quoted)
        )
        return str(sent.message_id)

    async def typing(self, chat_id: str) -> None:
        await self._call(lambda: self._bot.send_chat_action(int(chat_id), ChatAction.TYPING))

    def split(self, text: str) -> list[str]:
        return split_message(text, MAX_MESSAGE_LENGTH)

    async def aclose(self) -> None:
        try:
            await self._bot.shutdown()
        except TelegramError as exc:  # closing only; nothing is lost
            logger.debug("closing the Telegram client: %s", self._clean(str(exc)))

    async def _call(self, call: Callable[[], Awaitable[T]]) -> T:
        try:
            return await call()
        except TelegramError as exc:
            raise self._translated(exc) from None

    def _translated(self, exc: TelegramError) -> ConnectorError:
        text = self._clean(exc.message)
        if isinstance(exc, InvalidToken):
            return ConnectorAuthError(
                f"Telegram refused the bot token ({text}): check TELEGRAM_BOT_TOKEN"
            )
        if isinstance(exc, RetryAfter):
            return ConnectorRateLimited(f"Telegram asks to wait: {text}", retry_after=_seconds(exc))
        if isinstance(exc, Forbidden | BadRequest | ChatMigrated):
            return ConnectorRejected(f"Telegram refused the call: {text}")
        if isinstance(exc, Conflict):
            return ConnectorUnavailable(
                f"Telegram: {text} (a webhook is set for this bot, or another program "
                "polls it: delete the webhook or stop the other program)"
            )
        return ConnectorUnavailable(f"cannot reach Telegram: {text}")

    def _clean(self, text: str) -> str:
        return redacted(text, self._token)


def _seconds(exc: RetryAfter) -> float:
    with warnings.catch_warnings():
        # An int before python-telegram-bot 23, a timedelta after; both are read here.
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    return float(value)
