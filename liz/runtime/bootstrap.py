"""Put a process together: load agents, open the runtime, build the chain.

The HTTP server, the CLI and the Twitter loop all start here, so they behave alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib import import_module
from typing import cast

from liz.character.agent_files import DEFAULT_AGENTS_DIR as DEFAULT_AGENTS_DIR
from liz.character.agent_files import apply_prompts_dir as apply_prompts_dir
from liz.character.agent_files import load_agents as load_agents
from liz.config import Settings
from liz.config.names import warn_about_unknown_names
from liz.db.engine import create_engine, make_sessionmaker
from liz.facts.settings import warn_about_old_names
from liz.facts.store import FactStore
from liz.llm import LLMClient
from liz.llm.scripted_endpoint import scripted_client
from liz.observe.metrics import watch_pool
from liz.observe.tracing import configure_tracing, flush_tracing
from liz.pipeline import AgentFramework, Middleware
from liz.runtime.services import Runtime
from liz.types import Clock, SystemClock


def llm_from_settings(settings: Settings) -> LLMClient | None:
    """The configured LLM; liz's scripted model with ``LIZ_SCRIPTED_LLM=true``."""
    if settings.liz_scripted_llm:
        return scripted_client(settings)
    return LLMClient.from_settings(settings)


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    *,
    llm_client: LLMClient | None = None,
    clock: Clock | None = None,
    learn: bool = True,
) -> AsyncIterator[Runtime]:
    """Open the database and the LLM for one process; close them (after background work) on exit.

    The facts store is on when an LLM is configured, unless ``LIZ_FACTS_ENABLED=false``;
    then the process also works the learning queue (``learn=False``: a one-off command
    that should not, or ``LIZ_LEARNING_WORKER=false``). Each service gets its branch of
    ``settings``.
    """
    warn_about_old_names()
    warn_about_unknown_names()
    fact_settings = settings.facts
    clock = clock or SystemClock()
    configure_tracing()  # from the OTEL_* variables; nothing is exported unless they say where
    engine = create_engine(settings.database_url, settings)
    watch_pool(engine)
    llm = llm_client or llm_from_settings(settings)
    sessions = make_sessionmaker(engine)
    facts = None
    if llm is not None and fact_settings.enabled:
        facts = FactStore(sessions, llm, engine=engine, clock=clock, settings=fact_settings)
    runtime = Runtime(
        settings=settings,
        engine=engine,
        llm_client=llm,
        clock=clock,
        facts=facts,
    )
    try:
        if llm is not None:  # a budget needs every model's price, known before any turn
            runtime.budgets.check_prices([llm.small_model, llm.large_model, llm.embedding_model])
        if facts is not None:
            # Fail at startup, naming the fix, rather than on the first message.
            await facts.check()
            if learn:
                runtime.learning.start()
        yield runtime
    finally:
        await runtime.learning.stop()
        await runtime.background.drain()
        if facts is not None:
            await facts.close()
        if llm is not None and llm_client is None:
            await llm.close()
        await engine.dispose()
        flush_tracing()


def build_framework(
    runtime: Runtime, middleware: Sequence[Middleware] | None = None
) -> AgentFramework:
    """A framework running ``middleware``, by default the standard chain.

    Steps added with ``framework.use`` and each agent's own run before it.
    """
    if middleware is None:
        # liz.middleware is installed from the repository's middleware/ (setup.py), where
        # mypy, which reads folders, cannot follow it; the annotation keeps the type.
        middleware = cast("list[Middleware]", import_module("liz.middleware").standard_middleware)
    return AgentFramework(runtime, middleware)
