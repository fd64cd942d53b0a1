"""The Starlette app over a framework: the routes, the edge middleware, the error answers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route

from liz.agent import BaseAgent
from liz.config import Settings
from liz.http.agent_input import agent_input
from liz.http.edge import edge_middleware
from liz.http.errors import exception_handlers
from liz.http.info import health, list_agents
from liz.memory.http import fact_routes
from liz.pipeline import AgentFramework

Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]


def routes() -> list[BaseRoute]:
    return [
        Route("/agent/input", agent_input, methods=["POST"]),
        Route("/agents", list_agents, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        *fact_routes(),
    ]


def starlette_app(settings: Settings, lifespan: Lifespan | None = None) -> Starlette:
    return Starlette(
        routes=routes(),
        middleware=edge_middleware(settings),
        exception_handlers=dict(exception_handlers),
        lifespan=lifespan,
    )


def create_app(framework: AgentFramework, agents: Mapping[str, BaseAgent]) -> Starlette:
    """An app over a framework you built (tests, embedding liz in your own server)."""
    app = starlette_app(framework.runtime.settings)
    app.state.framework = framework
    app.state.agents = dict(agents)
    return app


def create_served_app(
    open_framework: Callable[[], AbstractAsyncContextManager[AgentFramework]],
    agents: Mapping[str, BaseAgent],
    settings: Settings,
) -> Starlette:
    """An app that opens its framework at startup and closes it at shutdown (``liz serve``)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with open_framework() as framework:
            app.state.framework = framework
            yield

    app = starlette_app(settings, lifespan)
    app.state.agents = dict(agents)
    return app
