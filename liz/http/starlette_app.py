"""The Starlette app over a framework: the routes, the edge middleware, the error answers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import BaseRoute, Route

from liz.agent import BaseAgent
from liz.config import Settings
from liz.facts.http import fact_routes
from liz.http.agent_input import agent_input
from liz.http.approvals import decide_approval
from liz.http.edge import edge_middleware
from liz.http.error_responses import exception_handlers
from liz.http.health import health, list_agents
from liz.http.metrics import metrics
from liz.http.openapi import api_doc_routes
from liz.http.usage import usage
from liz.pipeline import AgentFramework
from liz.playground import KeyPromptGate, favicon_routes, playground_routes
from liz.runtime.long_lived import startup_objects_frozen
from liz.telegram.webhook import telegram_webhook, webhook_routes


class App(Protocol):
    """What :func:`served_app` needs of a ``liz.App`` (named here: liz.app imports this)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def agents(self) -> Mapping[str, BaseAgent]: ...

    def open(self) -> AbstractAsyncContextManager[AgentFramework]: ...


Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]


def routes(settings: Settings) -> list[BaseRoute]:
    return [
        Route("/agent/input", agent_input, methods=["POST"]),
        Route("/agent/approvals/{approval_id}", decide_approval, methods=["POST"]),
        Route("/agents", list_agents, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/usage", usage, methods=["GET"]),
        *fact_routes(),
        *webhook_routes(),  # POST /telegram/{agentId}
        *api_doc_routes(),
        *favicon_routes(),
        *(playground_routes() if settings.liz_playground else []),
    ]


def starlette_app(settings: Settings, lifespan: Lifespan | None = None) -> Starlette:
    middleware = []
    if settings.liz_cors_origins:
        # Outermost, so a browser's preflight is answered before the key is asked for.
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=settings.liz_cors_origins,
                allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                allow_headers=["Authorization", "Content-Type", "Accept", "Idempotency-Key"],
                expose_headers=["X-Request-Id", "Retry-After", "Idempotent-Replayed"],
            )
        )
    key_prompt = []
    if settings.liz_api_key or settings.liz_jwt_secret:
        # A browser asking for a page without a key or token is asked for one (a 401 page).
        pages = ["/docs", *(["/playground"] if settings.liz_playground else [])]
        key_prompt.append(Middleware(KeyPromptGate, pages=pages))
    middleware.extend(edge_middleware(settings, before_auth=key_prompt))
    return Starlette(
        routes=routes(settings),
        middleware=middleware,
        exception_handlers=dict(exception_handlers),
        lifespan=lifespan,
    )


def create_app(framework: AgentFramework, agents: Mapping[str, BaseAgent]) -> Starlette:
    """An app over a framework you built (tests, embedding liz in your own server)."""
    app = starlette_app(framework.runtime.settings)
    app.state.framework = framework
    app.state.agents = dict(agents)
    return app


def served_app(liz_app: App) -> Starlette:
    """The Starlette app of an :class:`App`: it opens the app's process at startup and
    closes it at shutdown."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with (
            liz_app.open() as framework,
            telegram_webhook(app.state, framework, liz_app.agents),
        ):
            app.state.framework = framework
            with startup_objects_frozen():
                yield

    app = starlette_app(liz_app.settings, lifespan)
    app.state.agents = liz_app.agents
    return app
