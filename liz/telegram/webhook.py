"""Webhook mode: Telegram POSTs each update to ``/telegram/{agentId}`` on ``liz serve``.

For production behind HTTPS, instead of ``liz telegram run`` polling. Each request
must carry ``X-Telegram-Bot-Api-Secret-Token`` equal to ``TELEGRAM_WEBHOOK_SECRET``
(the ``secret_token`` given to ``setWebhook``); anything else gets 401 and changes
nothing. An update is stored in the inbox before the 200 answer, so Telegram
delivers it again if the server dies first; it is answered by the same loop as
polling (:class:`liz.connectors.bot.ChatBot`), run by one server process at a time.

Telegram's setup (once)::

    curl "https://api.telegram.org/bot$TELEGRAM_BOT_TOKEN/setWebhook" \\
      -d url=https://your.host/telegram/business-advisor \\
      -d secret_token=$TELEGRAM_WEBHOOK_SECRET
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from importlib.util import find_spec
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from liz.agent import BaseAgent
from liz.config.loading import load_settings
from liz.connectors.errors import ConnectorAuthError, ConnectorError
from liz.connectors.platform import Batch, BotIdentity, ChatPlatform
from liz.errors import LizError
from liz.pipeline import AgentFramework
from liz.types import InputSource

if TYPE_CHECKING:
    from liz.connectors.bot import ChatBot

logger = logging.getLogger(__name__)
_RESTART_SECONDS = 30.0

WEBHOOK_PATH = "/telegram/{agentId}"
SECRET_HEADER = "x-telegram-bot-api-secret-token"


@dataclass
class _Webhook:
    """The server's Telegram bot: its platform, who it is, and the wake-up for its loop."""

    platform: ChatPlatform
    allowed_users: list[int]
    secret: str
    identity: BotIdentity | None = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)


class _WokenByWebhook:
    """The platform as the loop sees it in webhook mode: reading waits for a POST."""

    def __init__(self, webhook: _Webhook, wait_seconds: float) -> None:
        self._webhook = webhook
        self._platform = webhook.platform
        self._wait = wait_seconds
        self.name = self._platform.name

    async def identify(self) -> BotIdentity:
        return await _identity(self._webhook)

    async def read(self, after: str | None) -> Batch:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._webhook.arrived.wait(), self._wait)
        self._webhook.arrived.clear()
        return Batch(position=None)

    async def send(self, chat_id: str, text: str, *, reply_to: str | None, key: str) -> str:
        return await self._platform.send(chat_id, text, reply_to=reply_to, key=key)

    async def typing(self, chat_id: str) -> None:
        await self._platform.typing(chat_id)

    def split(self, text: str) -> list[str]:
        return self._platform.split(text)

    async def aclose(self) -> None:
        await self._platform.aclose()


async def _identity(webhook: _Webhook) -> BotIdentity:
    if webhook.identity is None:
        webhook.identity = await webhook.platform.identify()
    return webhook.identity


@contextlib.asynccontextmanager
async def telegram_webhook(
    state: object, framework: AgentFramework, agents: Mapping[str, BaseAgent]
) -> AsyncIterator[None]:
    """Run the webhook's answering loop while the server runs, when webhook mode is on
    (``TELEGRAM_WEBHOOK_SECRET`` and ``TELEGRAM_BOT_TOKEN`` set, the extra installed)."""
    from liz.telegram.settings import TelegramSettings

    settings = load_settings(TelegramSettings)
    if settings.webhook_secret is None or settings.bot_token is None or not agents:
        yield
        return
    if find_spec("telegram") is None:
        logger.error("TELEGRAM_WEBHOOK_SECRET is set but pip install 'liz-agents[telegram]' is not")
        yield
        return
    from liz.connectors.bot import ChatBot
    from liz.telegram.platform import TelegramPlatform
    from liz.telegram.redaction import redact_in_logs

    redact_in_logs(settings.bot_token.get_secret_value())
    first = next(iter(agents.values()))

    def greeting(first_name: str) -> str:
        return first.templates.render("telegram_start.j2", first_name=first_name)

    webhook = _Webhook(
        platform=TelegramPlatform(settings, greeting=greeting),
        allowed_users=settings.allowed_users,
        secret=settings.webhook_secret.get_secret_value(),
    )
    state.telegram_webhook = webhook  # type: ignore[attr-defined]
    bot = ChatBot(
        first,
        framework,
        _WokenByWebhook(webhook, settings.poll_timeout),
        source=InputSource.TELEGRAM,
        agents=agents,
    )
    task = asyncio.create_task(_run_logged(bot), name="telegram-webhook")
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await webhook.platform.aclose()


async def _run_logged(bot: ChatBot) -> None:
    """Run the loop while the server runs; the server goes on serving HTTP meanwhile."""
    while True:
        try:
            await bot.run()
        except ConnectorAuthError as exc:
            logger.error("the Telegram webhook's bot stopped: %s", exc.message)
            return
        except LizError as exc:  # Telegram or the database out at start: try again
            logger.warning("the Telegram webhook's bot waits: %s", exc.message)
            await asyncio.sleep(_RESTART_SECONDS)


def _refusal(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def receive_update(request: Request) -> Response:
    """``POST /telegram/{agentId}``: store one update for the agent, then answer 200."""
    webhook: _Webhook | None = getattr(request.app.state, "telegram_webhook", None)
    if webhook is None:
        return _refusal(
            404, "Telegram webhook mode is off: set TELEGRAM_WEBHOOK_SECRET and TELEGRAM_BOT_TOKEN"
        )
    given = request.headers.get(SECRET_HEADER, "")
    if not secrets.compare_digest(given.encode(), webhook.secret.encode()):
        return _refusal(401, "wrong or missing X-Telegram-Bot-Api-Secret-Token")
    agent_id = request.path_params["agentId"]
    if agent_id not in request.app.state.agents:
        return _refusal(404, f"unknown agent {agent_id!r}")
    try:
        body = json.loads(await request.body())
    except ValueError:
        return _refusal(400, "the body is not a Telegram update (JSON)")
    if not isinstance(body, dict) or not isinstance(body.get("update_id"), int):
        return _refusal(400, "the body is not a Telegram update: no update_id")
    return await _store(request, webhook, agent_id, body)


async def _store(
    request: Request, webhook: _Webhook, agent_id: str, body: dict[str, object]
) -> Response:
    from telegram import Update

    from liz.connectors import inbox
    from liz.telegram.updates import to_answer

    framework: AgentFramework = request.app.state.framework
    try:
        me = await _identity(webhook)
    except ConnectorError as exc:  # Telegram delivers the update again later
        return _refusal(503, exc.message)
    update = Update.de_json(body, None)
    found = to_answer(
        update,
        me,
        allowed_users=webhook.allowed_users,
        greeting=lambda name: request.app.state.agents[agent_id].templates.render(
            "telegram_start.j2", first_name=name
        ),
    )
    batch = Batch(position=str(update.update_id), messages=[] if found is None else [found])
    await inbox.store_batch(
        framework.runtime.engine,
        bot_key=f"telegram:{me.id}",
        agent_id=agent_id,
        batch=batch,
        at=framework.runtime.clock.now(),
    )
    if found is not None:
        webhook.arrived.set()
    return JSONResponse({"ok": True})


def webhook_routes() -> list[BaseRoute]:
    return [Route(WEBHOOK_PATH, receive_update, methods=["POST"])]
