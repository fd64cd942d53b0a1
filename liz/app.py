"""The application object: your agents, your middleware, your error handlers, one ASGI app.

>>> from liz import App, BaseAgent, Character
>>> async def log_timing(req, res, next) -> None:
...     await next()
>>> async def no_shouting(req, res, next) -> None:
...     req.input.text = req.input.text.lower()
...     await next()
>>> app = App()                          # settings from the environment and .env
>>> chef = app.add_agent(BaseAgent(Character(agent_id="chef", name="Chef", system="You cook.")))
>>> app = app.use(log_timing)            # runs for every input, before the standard steps
>>> chef = chef.use(no_shouting)         # runs for the chef's inputs only
>>> app.agent("chef") is chef
True

Serve it with ``liz serve myapp:app`` (or ``uvicorn myapp:app``), talk to it with
``liz chat myapp:app --agent chef``, run its X account with ``liz twitter myapp:app
--agent chef``: every one of them runs the same chain.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

from liz.agent import BaseAgent
from liz.config import Settings
from liz.config.loading import load_settings
from liz.errors import UsageError
from liz.pipeline import ErrorHandler, Middleware
from liz.types import Clock

if TYPE_CHECKING:
    from liz.llm import LLMClient
    from liz.pipeline import AgentFramework
    from liz.runtime.services import Runtime

logger = logging.getLogger(__name__)


class App:
    """Agents, middleware, error handlers and settings: what one liz process runs.

    ``chain`` replaces the standard steps (``liz.middleware.standard_middleware``)
    when you want to order every step yourself. ``llm_client`` and ``clock`` are
    for tests: by default the settings name the LLM and the clock is the system's.
    With ``migrate`` (the default) the database is brought to the newest schema at start.
    """

    def __init__(
        self,
        agents: Iterable[BaseAgent] = (),
        *,
        settings: Settings | None = None,
        chain: Sequence[Middleware] | None = None,
        llm_client: LLMClient | None = None,
        clock: Clock | None = None,
        migrate: bool = True,
    ) -> None:
        self._settings = settings
        # Bring the database to the newest schema when the process starts.
        self.migrate = migrate
        self._chain = None if chain is None else list(chain)
        self._middleware: list[Middleware] = []
        self._error_handlers: list[ErrorHandler] = []
        self._llm_client = llm_client
        self._clock = clock
        self._asgi: Starlette | None = None
        self._warned_no_llm = False
        self.agents: dict[str, BaseAgent] = {}
        for agent in agents:
            self.add_agent(agent)

    @property
    def settings(self) -> Settings:
        """The settings given, or read from the environment and ``.env`` on first use."""
        if self._settings is None:
            self._settings = load_settings(Settings)
        return self._settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        if self._asgi is not None:
            raise UsageError("the app is already serving; set its settings before it starts")
        self._settings = settings

    def use(self, *middleware: Middleware) -> App:
        """Add steps every input runs through, in order, before the agent's and the chain's."""
        for step in middleware:
            if not callable(step):
                raise TypeError(f"middleware must be an async callable, got {step!r}")
        self._middleware.extend(middleware)
        return self

    def on_error(self, handler: ErrorHandler) -> App:
        """Call ``handler(exc, req, res)`` when a step raises; it may change ``res``."""
        self._error_handlers.append(handler)
        return self

    def add_agent(self, agent: BaseAgent) -> BaseAgent:
        if not isinstance(agent, BaseAgent):
            raise TypeError(f"add_agent() takes a BaseAgent, got {agent!r}")
        if agent.agent_id in self.agents:
            raise UsageError(f"two agents with id {agent.agent_id!r}; agent ids must differ")
        self.agents[agent.agent_id] = agent
        return agent

    def add_agents_from(self, folder: str | Path | None = None) -> App:
        """Add every agent in a folder (``*.py`` and character ``*.json`` files)."""
        from liz.runtime.bootstrap import load_agents

        for agent in load_agents(folder).values():
            self.add_agent(agent)
        return self

    def agent(self, agent_id: str) -> BaseAgent:
        """The agent with this id, or a :class:`UsageError` listing the ones there are."""
        if agent_id not in self.agents:
            known = ", ".join(sorted(self.agents)) or "none"
            raise UsageError(
                f"unknown agent {agent_id!r}: there is no agent with id {agent_id!r}; "
                f"the agents are: {known}"
            )
        return self.agents[agent_id]

    def framework(self, runtime: Runtime) -> AgentFramework:
        """The chain this app runs, over ``runtime``."""
        from liz.runtime.bootstrap import build_framework

        framework = build_framework(runtime, self._chain)
        framework.use(*self._middleware)
        for handler in self._error_handlers:
            framework.on_error(handler)
        return framework

    @asynccontextmanager
    async def open(self) -> AsyncIterator[AgentFramework]:
        """Build the process: settings, then the runtime (database, LLM, facts), then the chain.

        ``liz serve``, ``liz chat``, ``liz twitter`` and the ASGI lifespan all start
        here; the runtime is closed (background work drained) on exit.
        """
        from liz.db.migrate import upgrade_async
        from liz.runtime.bootstrap import apply_prompts_dir, open_runtime
        from liz.tools.mcp_lifecycle import mcp_servers_running

        if not self.agents:
            raise UsageError(
                "the app has no agents: add one with app.add_agent(...) or "
                "app.add_agents_from('agents/')"
            )
        settings = self.settings
        apply_prompts_dir(self.agents.values(), settings.liz_prompts_dir)
        if self.migrate:
            await upgrade_async(settings.database_url, settings)
        async with (
            open_runtime(settings, llm_client=self._llm_client, clock=self._clock) as rt,
            mcp_servers_running(self.agents.values()),
        ):
            if rt.llm_client is None and not self._warned_no_llm:
                self._warned_no_llm = True
                logger.warning(
                    "no LLM configured (set OPENAI_API_KEY, OPENROUTER_API_KEY or "
                    "OPENAI_BASE_URL); POST /agent/input answers 503 until one is set. "
                    "To try liz without a key: LIZ_SCRIPTED_LLM=true (liz serve --scripted)"
                )
            yield self.framework(rt)

    def asgi(self) -> Starlette:
        """The Starlette app serving this app (built once)."""
        if self._asgi is None:
            from liz.http.starlette_app import served_app

            self._asgi = served_app(self)
        return self._asgi

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.asgi()(scope, receive, send)


def default_app(agents_dir: str | Path | None = None) -> App:
    """What ``liz serve`` runs without a target: the agents of a folder, the standard chain.

    The folder is ``agents_dir``, else ``LIZ_AGENTS_DIR``, else the bundled agents.
    """
    app = App()
    return app.add_agents_from(agents_dir or app.settings.liz_agents_dir)
