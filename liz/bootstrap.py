"""Put a process together: load agents, open the runtime, build the chain.

The HTTP server, the CLI and the Twitter loop all start here, so they behave alike.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from liz.agent import BaseAgent
from liz.config import Settings
from liz.db.engine import create_engine, make_sessionmaker
from liz.errors import UsageError
from liz.facts.settings import FactSettings
from liz.facts.store import FactStore
from liz.llm import LLMClient
from liz.pipeline import AgentFramework
from liz.routes import standard_routes
from liz.runtime import Runtime
from liz.templates import PromptTemplates, default_templates
from liz.types import Character, Clock, Middleware, SystemClock

DEFAULT_AGENTS_DIR = Path(__file__).parent / "agents"  # the bundled agents, as installed


def load_agents(
    directory: str | Path | None = None, *, prompts_dir: str | Path | None = None
) -> dict[str, BaseAgent]:
    """Load every agent in a folder, by agent id.

    A ``*.py`` file defines ``create_agent()`` returning a :class:`BaseAgent`
    (or a module-level ``agent``); a ``*.json`` file is a Liz or Eliza character
    and gets the standard routes. Files starting with ``_`` are skipped. With
    ``prompts_dir`` (``LIZ_PROMPTS_DIR``), agents on the built-in templates use
    that folder's templates first.
    """
    folder = Path(directory) if directory is not None else DEFAULT_AGENTS_DIR
    if not folder.is_dir():
        raise UsageError(f"agents folder {str(folder)!r} does not exist; pass --agents DIR")
    agents: dict[str, BaseAgent] = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith("_"):
            continue
        if path.suffix == ".py":
            agent = _agent_from_module(path)
        elif path.suffix == ".json":
            agent = _agent_from_character(path)
        else:
            continue
        if agent.agent_id in agents:
            raise UsageError(f"{path}: a second agent with id {agent.agent_id!r}; ids must differ")
        agents[agent.agent_id] = agent
    if not agents:
        raise UsageError(f"no agents in {str(folder)!r}: add a *.py or *.json agent there")
    apply_prompts_dir(agents.values(), prompts_dir)
    return agents


def apply_prompts_dir(agents: Iterable[BaseAgent], prompts_dir: str | Path | None) -> None:
    """Agents on the built-in templates use ``LIZ_PROMPTS_DIR``'s templates first."""
    if prompts_dir is None:
        return
    if not Path(prompts_dir).is_dir():
        raise UsageError(f"LIZ_PROMPTS_DIR {str(prompts_dir)!r} is not a folder")
    overridden = PromptTemplates(prompts_dir)
    for agent in agents:
        if agent.templates is default_templates:
            agent.templates = overridden


def _agent_from_module(path: Path) -> BaseAgent:
    module_name = f"liz_user_agents.{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    factory = getattr(module, "create_agent", None)
    agent = factory() if callable(factory) else getattr(module, "agent", None)
    if not isinstance(agent, BaseAgent):
        raise UsageError(f"{path}: define create_agent() returning a BaseAgent, or `agent`")
    return agent


def _agent_from_character(path: Path) -> BaseAgent:
    try:
        character = Character.from_json_file(path)
    except ValueError as exc:
        raise UsageError(f"{path}: not a valid character file: {exc}") from exc
    agent = BaseAgent(character)
    for route in standard_routes():
        agent.add_route(route)
    return agent


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    *,
    llm_client: LLMClient | None = None,
    clock: Clock | None = None,
    fact_settings: FactSettings | None = None,
) -> AsyncIterator[Runtime]:
    """Open the database and the LLM for one process; close them (after background work) on exit.

    The facts store is on when an LLM is configured, unless ``LIZ_FACTS_ENABLED=false``.
    """
    fact_settings = fact_settings or FactSettings()
    clock = clock or SystemClock()
    engine = create_engine(settings.database_url, settings)
    llm = llm_client or LLMClient.from_settings(settings)
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
        if facts is not None:
            # Fail at startup, naming the fix, rather than on the first message.
            await facts.check()
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
