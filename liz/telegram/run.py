"""``liz telegram run``: one agent's Telegram bot, polling, until stopped."""

from __future__ import annotations

import logging
from importlib.util import find_spec

from liz.app import App
from liz.errors import UsageError
from liz.settings_errors import load_settings
from liz.types import InputSource

logger = logging.getLogger(__name__)

MISSING_EXTRA = "the Telegram bot needs the telegram extra: pip install 'liz-agents[telegram]'"


async def run_telegram(app: App, agent_id: str) -> None:
    """Run the Telegram bot of ``app``'s agent ``agent_id`` until cancelled.

    Raises :class:`UsageError` for a missing extra, a missing token or an unknown
    agent, and :class:`liz.connectors.errors.ConnectorAuthError` when Telegram
    refuses the token.
    """
    if find_spec("telegram") is None:
        raise UsageError(MISSING_EXTRA)
    from liz.connectors.bot import ChatBot, stop_on_sigterm
    from liz.long_lived import startup_objects_frozen
    from liz.telegram.platform import TOKEN_MISSING, TelegramPlatform
    from liz.telegram.redaction import redact_in_logs
    from liz.telegram.settings import TelegramSettings

    settings = load_settings(TelegramSettings)
    if settings.bot_token is None:
        raise UsageError(TOKEN_MISSING)
    redact_in_logs(settings.bot_token.get_secret_value())
    agent = app.agent(agent_id)

    def greeting(first_name: str) -> str:
        return agent.templates.render("telegram_start.j2", first_name=first_name)

    platform = TelegramPlatform(settings, greeting=greeting)
    stop_on_sigterm()
    try:
        async with app.open() as framework:
            framework.runtime.llm  # noqa: B018 -- raises LLMNotConfigured now, not at the first message
            bot = ChatBot(agent, framework, platform, source=InputSource.TELEGRAM)
            with startup_objects_frozen():
                await bot.run()
    finally:
        await platform.aclose()
