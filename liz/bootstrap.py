"""Put a process together: load agents, open the runtime, build the chain.

The HTTP server, the CLI and the Twitter loop all start here, so they behave alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from liz.agent_files import DEFAULT_AGENTS_DIR as DEFAULT_AGENTS_DIR
from liz.agent_files import apply_prompts_dir as apply_prompts_dir
from liz.agent_files import load_agents as load_agents
from liz.config import Settings
from liz.db.engine import create_engine, make_sessionmaker
from liz.llm import LLMClient
from liz.memory.settings import MemorySettings
from liz.memory.store import MemoryStore
from liz.pipeline import AgentFramework
from liz.runtime import Runtime
from liz.types import Clock, Middleware, SystemClock


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    *,
    llm_client: LLMClient | None = None,
    clock: Clock | None = None,
    memory_settings: MemorySettings | None = None,
) -> AsyncIterator[Runtime]:
    """Open the database and the LLM for one process; close them (after background work) on exit.

    The long-term memory is on when an LLM is configured, unless ``LIZ_MEMORY_ENABLED=false``.
    """
    memory_settings = memory_settings or MemorySettings()
    clock = clock or SystemClock()
    engine = create_engine(settings.database_url, settings)
    llm = llm_client or LLMClient.from_settings(settings)
    sessions = make_sessionmaker(engine)
    memory = None
    if llm is not None and memory_settings.enabled:
        memory = MemoryStore(sessions, llm, engine=engine, clock=clock, settings=memory_settings)
    runtime = Runtime(
        settings=settings,
        engine=engine,
        llm_client=llm,
        clock=clock,
        memory=memory,
    )
    try:
        if memory is not None:
            # Fail at startup, naming the fix, rather than on the first message.
            await memory.check()
        yield runtime
    finally:
        await runtime.background.drain()
        if llm is not None and llm_client is None:
            await llm.close()
        await engine.dispose()


def build_framework(
    runtime: Runtime, middleware: Sequence[Middleware] | None = None
) -> AgentFramework:
    """A framework running ``middleware``, by default the standard chain.

    Steps added with ``framework.use`` and each agent's own run before it.
    """
    from liz.middleware import standard_middleware

    return AgentFramework(runtime, standard_middleware if middleware is None else middleware)
