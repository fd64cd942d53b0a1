"""The ASGI entry point ``liz serve`` runs; also usable with any ASGI server.

    uvicorn --factory liz.asgi:app_from_env --workers 4

reads the settings from the environment and the agents from ``LIZ_AGENTS_DIR``
(default: the bundled ``agents/`` folder).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette

from liz.bootstrap import build_framework, load_agents, open_runtime
from liz.config import Settings
from liz.http import create_served_app
from liz.pipeline import AgentFramework

logger = logging.getLogger(__name__)


def create_app_for(settings: Settings, agents_dir: str | None) -> Starlette:
    agents = load_agents(agents_dir, prompts_dir=settings.liz_prompts_dir)

    @asynccontextmanager
    async def open_framework() -> AsyncIterator[AgentFramework]:
        async with open_runtime(settings) as runtime:
            if runtime.llm_client is None:
                logger.warning(
                    "no LLM configured (set OPENAI_API_KEY, OPENROUTER_API_KEY or "
                    "OPENAI_BASE_URL); POST /agent/input answers 503 until one is set"
                )
            yield build_framework(runtime)

    return create_served_app(open_framework, agents, settings)


def app_from_env() -> Starlette:
    return create_app_for(Settings(), os.environ.get("LIZ_AGENTS_DIR"))
