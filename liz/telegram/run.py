"""``liz telegram run``: one agent's Telegram bot, polling, until stopped."""

from __future__ import annotations

from importlib.util import find_spec

from liz.agent import BaseAgent
from liz.app import App
from liz.config.loading import load_settings
from liz.connectors.run import run_chat_bot
from liz.errors import UsageError
from liz.types import InputSource

MISSING_EXTRA = "the Telegram bot needs the telegram extra: pip install 'liz-agents[telegram]'"


async def run_telegram(app: App, agent_id: str) -> None:
    """Run the Telegram bot of ``app``'s agent ``agent_id`` until cancelled.

    Raises :class:`UsageError` for a missing extra, a missing token or an unknown
    agent, and :class:`liz.connectors.errors.ConnectorAuthError` when Telegram
    refuses the token.
    """
    if find_spec("telegram") is None:
        raise UsageError(MISSING_EXTRA)
    from liz.telegram.platform import TOKEN_MISSING, TelegramPlatform
    from liz.telegram.redaction import redact_in_logs
    from liz.telegram.settings import TelegramSettings

    settings = load_settings(TelegramSettings)
    if settings.bot_token is None:
        raise UsageError(TOKEN_MISSING)
    redact_in_logs(settings.bot_token.get_secret_value())

    def platform_for(agent: BaseAgent) -> TelegramPlatform:
        def greeting(first_name: str) -> str:
            return agent.templates.render("telegram_start.j2", first_name=first_name)

        return TelegramPlatform(settings, greeting=greeting)

    await run_chat_bot(app, agent_id, source=InputSource.TELEGRAM, platform_for=platform_for)
