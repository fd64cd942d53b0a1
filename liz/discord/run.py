"""``liz discord run``: one agent's Discord bot, on the gateway, until stopped."""

from __future__ import annotations

import logging
from importlib.util import find_spec

from liz.app import App
from liz.errors import UsageError
from liz.settings_errors import load_settings
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
    from liz.connectors.bot import ChatBot, stop_on_sigterm
    from liz.discord.gateway import DiscordGateway, QuietVoice
    from liz.discord.platform import TOKEN_MISSING, DiscordPlatform
    from liz.discord.settings import DiscordSettings
    from liz.long_lived import startup_objects_frozen

    settings = load_settings(DiscordSettings)
    if settings.bot_token is None:
        raise UsageError(TOKEN_MISSING)
    agent = app.agent(agent_id)
    logging.getLogger("discord.client").addFilter(QuietVoice())
    platform = DiscordPlatform(settings, DiscordGateway(settings.bot_token.get_secret_value()))
    stop_on_sigterm()
    try:
        async with app.open() as framework:
            framework.runtime.llm  # noqa: B018 -- raises LLMNotConfigured now, not at the first message
            bot = ChatBot(agent, framework, platform, source=InputSource.DISCORD)
            with startup_objects_frozen():
                await bot.run()
    finally:
        await platform.aclose()
