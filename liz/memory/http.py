"""HTTP routes over a user's facts: ``/agents/{agentId}/users/{userId}/facts``.

``GET`` lists (``?q=`` searches, ``?limit=``, ``?includeRetired=true``);
``GET .../{factId}`` one fact; ``GET .../{factId}/history`` its changes;
``DELETE .../{factId}`` retires it (its history stays).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from liz.errors import LizError
from liz.memory.store import MemoryStore

logger = logging.getLogger(__name__)

FACTS = "/agents/{agentId}/users/{userId}/facts"
MAX_LIMIT = 1000


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class _Refused(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


def _scope(request: Request) -> tuple[MemoryStore, str, str]:
    agent_id = request.path_params["agentId"]
    agents: Mapping[str, Any] = request.app.state.agents
    if agent_id not in agents:
        raise _Refused(_error(f"unknown agent {agent_id!r}; GET /agents lists the agents", 404))
    store: MemoryStore | None = request.app.state.framework.runtime.memory
    if store is None:
        raise _Refused(
            _error(
                "long-term memory is off: configure an LLM (OPENAI_API_KEY, OPENROUTER_API_KEY "
                "or OPENAI_BASE_URL) to turn it on",
                503,
            )
        )
    return store, agent_id, request.path_params["userId"]


def _limit(request: Request, default: int) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return default
    # isascii: a superscript two is a digit to str.isdigit, yet int() refuses it.
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_LIMIT:
        raise _Refused(
            _error(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {raw!r}", 400)
        )
    return int(raw)


async def list_or_search(request: Request) -> Response:
    try:
        store, agent_id, user_id = _scope(request)
        limit = _limit(request, 100)
        query = request.query_params.get("q")
        if query is not None:
            if not query.strip():
                return _error("q is empty; give some words to search for, or leave q out", 400)
            facts = await store.search(query, agent_id, user_id, limit=min(limit, 100))
        else:
            retired = request.query_params.get("includeRetired", "false").lower() == "true"
            facts = await store.list(agent_id, user_id, include_retired=retired, limit=limit)
    except _Refused as refused:
        return refused.response
    except LizError as exc:
        return _error(exc.message, exc.status)
    return JSONResponse({"facts": [fact.to_json_dict() for fact in facts]})


async def get_fact(request: Request) -> Response:
    fact_id = request.path_params["factId"]
    try:
        store, agent_id, user_id = _scope(request)
        fact = await store.get(fact_id, agent_id, user_id)
    except _Refused as refused:
        return refused.response
    except LizError as exc:
        return _error(exc.message, exc.status)
    if fact is None:
        return _error(f"no fact {fact_id!r} for agent {agent_id!r} and user {user_id!r}", 404)
    return JSONResponse(fact.to_json_dict())


async def fact_history(request: Request) -> Response:
    try:
        store, agent_id, user_id = _scope(request)
        entries = await store.history(request.path_params["factId"], agent_id, user_id)
    except _Refused as refused:
        return refused.response
    except LizError as exc:
        return _error(exc.message, exc.status)
    return JSONResponse({"history": [entry.to_json_dict() for entry in entries]})


async def delete_fact(request: Request) -> Response:
    try:
        store, agent_id, user_id = _scope(request)
        fact_id = request.path_params["factId"]
        await store.delete(fact_id, agent_id, user_id, reason="deleted over HTTP")
        fact = await store.get(fact_id, agent_id, user_id)
    except _Refused as refused:
        return refused.response
    except LizError as exc:
        return _error(exc.message, exc.status)
    return JSONResponse(fact.to_json_dict() if fact else {"id": fact_id})


def fact_routes() -> list[BaseRoute]:
    """The facts routes, for the app to mount."""
    return [
        Route(FACTS, list_or_search, methods=["GET"]),
        Route(FACTS + "/{factId}", get_fact, methods=["GET"]),
        Route(FACTS + "/{factId}/history", fact_history, methods=["GET"]),
        Route(FACTS + "/{factId}", delete_fact, methods=["DELETE"]),
    ]
