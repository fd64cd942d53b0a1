"""The HTTP shell over the framework: ``POST /agent/input``, ``GET /agents``, ``GET /health``."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from pydantic import ValidationError
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from liz.agent import BaseAgent
from liz.errors import LizError, LLMNotConfigured
from liz.facts.http import fact_routes
from liz.pipeline import AgentFramework
from liz.types import InputObject, InputSource

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1_000_000


def error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def describe_validation_error(exc: ValidationError, prefix: str) -> str:
    parts = []
    for problem in exc.errors():
        where = ".".join(str(part) for part in (prefix, *problem["loc"]))
        parts.append(f"{where}: {problem['msg']}")
    return "; ".join(parts)


async def read_input(request: Request) -> InputObject:
    """Parse Liz's body ``{"input": {...}}``; raise an HTTPException saying what is wrong."""
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise HTTPException(413, f"request body is larger than {MAX_BODY_BYTES} bytes")
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HTTPException(400, f"request body is not valid JSON: {exc}") from exc
    if not isinstance(payload, dict) or not isinstance(payload.get("input"), dict):
        raise HTTPException(
            400, 'request body must be a JSON object like {"input": {"agentId": ..., ...}}'
        )
    fields: dict[str, Any] = payload["input"]
    if fields.get("source", InputSource.NETWORK.value) != InputSource.NETWORK.value:
        raise HTTPException(400, "input.source cannot be set over HTTP; leave it out")
    if "route" in fields:
        raise HTTPException(400, "input.route cannot be set over HTTP; the router picks the route")
    try:
        return InputObject.model_validate({**fields, "source": InputSource.NETWORK})
    except ValidationError as exc:
        raise HTTPException(400, describe_validation_error(exc, "input")) from exc


async def agent_input(request: Request) -> Response:
    input = await read_input(request)
    agents: Mapping[str, BaseAgent] = request.app.state.agents
    agent = agents.get(input.agent_id)
    if agent is None:
        return error(f"unknown agent {input.agent_id!r}; GET /agents lists the agents", 404)
    framework: AgentFramework = request.app.state.framework
    if framework.runtime.llm_client is None:
        unconfigured = LLMNotConfigured()
        return error(unconfigured.message, unconfigured.status)
    if "text/event-stream" in request.headers.get("accept", ""):
        return StreamingResponse(
            stream_events(framework, input, agent), media_type="text/event-stream"
        )
    res = await framework.process(input, agent)
    if res.reply is None:
        failure = res.error or LizError("no reply")
        return error(failure.message, failure.status)
    return JSONResponse(res.reply.to_json_dict())


def sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


async def stream_events(
    framework: AgentFramework, input: InputObject, agent: BaseAgent
) -> AsyncIterator[str]:
    """``token`` events while the reply is written, then one ``reply`` or ``error`` event.

    The turn runs to its end even if the client goes away, so its memories are whole.
    """
    events: asyncio.Queue[str | None] = asyncio.Queue()

    async def on_token(token: str) -> None:
        await events.put(sse("token", {"text": token}))

    async def run() -> None:
        try:
            res = await framework.process(input, agent, on_token=on_token)
            if res.reply is not None:
                await events.put(sse("reply", res.reply.to_json_dict()))
            else:
                failure = res.error or LizError("no reply")
                await events.put(sse("error", {"error": failure.message, "status": failure.status}))
        finally:
            await events.put(None)

    turn = asyncio.create_task(run())
    try:
        while (event := await events.get()) is not None:
            yield event
    finally:
        await asyncio.shield(turn)


async def list_agents(request: Request) -> Response:
    agents: Mapping[str, BaseAgent] = request.app.state.agents
    return JSONResponse(
        {
            "agents": [
                {
                    "agentId": agent.agent_id,
                    "name": agent.name,
                    "routes": [
                        {
                            "name": r.name,
                            "description": r.description,
                            "internalOnly": r.internal_only,
                        }
                        for r in agent.get_routes()
                    ],
                }
                for agent in agents.values()
            ]
        }
    )


async def health(request: Request) -> Response:
    framework: AgentFramework = request.app.state.framework
    try:
        async with framework.runtime.sessions() as session:
            await session.execute(text("SELECT 1"))
        database = "ok"
    except Exception as exc:  # the health check reports, it never fails itself
        logger.warning("health check: database unreachable: %s", exc)
        database = f"unreachable: {type(exc).__name__}"
    llm = "configured" if framework.runtime.llm_client is not None else "not configured"
    status = 200 if database == "ok" else 503
    return JSONResponse(
        {"status": "ok" if status == 200 else "degraded", "database": database, "llm": llm},
        status_code=status,
    )


class BearerAuth(BaseHTTPMiddleware):
    """When LIZ_API_KEY is set, every route but /health needs ``Authorization: Bearer <key>``."""

    def __init__(self, app: Any, api_key: str) -> None:
        super().__init__(app)
        self.expected = f"Bearer {api_key}"

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.url.path != "/health":
            given = request.headers.get("authorization", "")
            if not secrets.compare_digest(given.encode(), self.expected.encode()):
                return error(
                    "missing or wrong API key: send Authorization: Bearer <LIZ_API_KEY>", 401
                )
        return await call_next(request)


async def http_error(request: Request, exc: Exception) -> Response:
    """Any ``LizError`` or ``HTTPException`` a route raises becomes ``{"error": ...}``."""
    if isinstance(exc, LizError):
        return error(exc.message, exc.status)
    if isinstance(exc, HTTPException):
        return error(exc.detail, exc.status_code)
    return error("internal error", 500)


def routes() -> list[BaseRoute]:
    return [
        Route("/agent/input", agent_input, methods=["POST"]),
        Route("/agents", list_agents, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        *fact_routes(),
    ]


Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]


def _app(api_key: str | None, lifespan: Lifespan | None) -> Starlette:
    middleware = [Middleware(BearerAuth, api_key=api_key)] if api_key else []
    return Starlette(
        routes=routes(),
        middleware=middleware,
        exception_handlers={HTTPException: http_error, LizError: http_error},
        lifespan=lifespan,
    )


def create_app(framework: AgentFramework, agents: Mapping[str, BaseAgent]) -> Starlette:
    """An app over a framework you built (tests, embedding liz in your own server)."""
    settings = framework.runtime.settings
    api_key = settings.liz_api_key.get_secret_value() if settings.liz_api_key else None
    app = _app(api_key, None)
    app.state.framework = framework
    app.state.agents = dict(agents)
    return app


def create_served_app(
    open_framework: Callable[[], AbstractAsyncContextManager[AgentFramework]],
    agents: Mapping[str, BaseAgent],
    api_key: str | None,
) -> Starlette:
    """An app that opens its framework at startup and closes it at shutdown (``liz serve``)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with open_framework() as framework:
            app.state.framework = framework
            yield

    app = _app(api_key, lifespan)
    app.state.agents = dict(agents)
    return app
