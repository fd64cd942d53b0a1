"""``liz discord run``: one agent's Discord bot, on the gateway, until stopped."""

from __future__ import annotations

import logging
from importlib.util import find_spec

from liz.agent import BaseAgent
from liz.app import App
from liz.config.loading import load_settings
from liz.connectors.run import run_chat_bot
from liz.errors import UsageError
from liz.types import InputSource

MISSING_EXTRA = "the Discord bot needs the discord extra: pip install 'liz-agents[discord]'"


async def run_discord(app: App, agent_id: str) -> None:
    """Run the Discord bot of ``app``'s agent ``agent_id`` until cancelled.

    Raises :class:`UsageError` for a missing extra, a missing token or an unknown
    agent, and :class:`liz.connectors.errors.ConnectorAuthError` when Discord
    refuses the token.
    """
    if find_spec("discord") is None:
        raise UsageError(MISSING_EXTRA)
    from liz.discord.gateway import DiscordGateway, QuietVoice
    from liz.discord.platform import TOKEN_MISSING, DiscordPlatform
    from liz.discord.settings import DiscordSettings

    settings = load_settings(DiscordSettings)
    if settings.bot_token is None:
        raise UsageError(TOKEN_MISSING)
    token = settings.bot_token.get_secret_value()

    def platform_for(agent: BaseAgent) -> DiscordPlatform:
        logging.getLogger("discord.client").addFilter(QuietVoice())
        return DiscordPlatform(settings, DiscordGateway(token, proxy=settings.proxy))

    await run_chat_bot(app, agent_id, source=InputSource.DISCORD, platform_for=platform_for)
