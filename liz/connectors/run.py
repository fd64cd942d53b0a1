"""``liz telegram run`` and ``liz discord run``: one agent's chat bot, until stopped.

The commands differ only in their platform (its extra, settings and client), which
each platform's ``run`` module builds and passes in; the rest is here.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

from liz.agent import BaseAgent
from liz.connectors.bot import ChatBot
from liz.connectors.platform import ChatPlatform
from liz.runtime.long_lived import startup_objects_frozen
from liz.types import InputSource

if TYPE_CHECKING:
    from liz.app import App


async def run_chat_bot(
    app: App,
    agent_id: str,
    *,
    source: InputSource,
    platform_for: Callable[[BaseAgent], ChatPlatform],
) -> None:
    """Answer as ``app``'s agent ``agent_id`` on the platform ``platform_for`` connects it
    to, until cancelled (Ctrl-C or SIGTERM).

    Raises :class:`liz.errors.UsageError` for an unknown agent, and
    :class:`liz.connectors.errors.ConnectorAuthError` when the platform refuses the token.
    """
    agent = app.agent(agent_id)
    platform = platform_for(agent)
    stop_on_sigterm()
    try:
        async with app.open() as framework:
            framework.runtime.llm  # noqa: B018 -- raises LLMNotConfigured now, not at the first message
            bot = ChatBot(agent, framework, platform, source=source)
            with startup_objects_frozen():
                await bot.run()
    finally:
        await platform.aclose()


def stop_on_sigterm() -> None:
    """SIGTERM (systemd, Docker, Kubernetes) stops the bot as Ctrl-C does: a send in
    flight is finished and noted first, so a restart sends nothing twice."""
    task = asyncio.current_task()
    if task is not None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
