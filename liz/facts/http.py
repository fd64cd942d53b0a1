"""HTTP routes over a user's facts: ``/agents/{agentId}/users/{userId}/facts``.

``GET`` lists (``?q=`` searches, ``?limit=``, ``?includeRetired=true``; a list also
says what is still to be learned from the user: ``"learning": {"pending", ...}``);
``GET .../{factId}`` one fact; ``GET .../{factId}/history`` its changes;
``DELETE .../{factId}`` retires it (its history stays). Handlers raise
:class:`~liz.errors.LizError`; the app answers any of them as ``{"error": ...}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from liz.errors import InputError, LizError, NotFound
from liz.facts.store import FactStore
from liz.http.bodies import Fact, FactHistory, FactList, json_response
from liz.learning_queue.health import learning_backlog

# `segment`: an id holding "/" or "%" arrives encoded, and whole (liz.http.path_segments).
FACTS = "/agents/{agentId:segment}/users/{userId:segment}/facts"
MAX_LIMIT = 1000


def _scope(request: Request) -> tuple[FactStore, str, str]:
    agent_id = request.path_params["agentId"]
    agents: Mapping[str, Any] = request.app.state.agents
    if agent_id not in agents:
        raise NotFound(f"unknown agent {agent_id!r}; GET /agents lists the agents")
    store: FactStore | None = request.app.state.framework.runtime.facts
    if store is None:
        raise LizError(
            "the facts store is off: configure an LLM (OPENAI_API_KEY, OPENROUTER_API_KEY "
            "or OPENAI_BASE_URL) to turn it on",
            status=503,
        )
    return store, agent_id, request.path_params["userId"]


def _limit(request: Request, default: int) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return default
    # isascii: a superscript two is a digit to str.isdigit, yet int() refuses it.
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_LIMIT:
        raise InputError(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {raw!r}")
    return int(raw)


async def list_or_search(request: Request) -> Response:
    store, agent_id, user_id = _scope(request)
    limit = _limit(request, 100)
    query = request.query_params.get("q")
    if query is not None:
        if not query.strip():
            raise InputError("q is empty; give some words to search for, or leave q out")
        facts = await store.search(query, agent_id, user_id, limit=min(limit, 100))
    else:
        retired = request.query_params.get("includeRetired", "false").lower() == "true"
        facts = await store.list(agent_id, user_id, include_retired=retired, limit=limit)
        # What is still to be learned from this user (the playground says so).
        runtime = request.app.state.framework.runtime
        learning = await learning_backlog(runtime, (agent_id, user_id))
        return json_response(FactList(facts=facts, learning=learning))
    return json_response(FactList(facts=facts))


async def get_fact(request: Request) -> Response:
    store, agent_id, user_id = _scope(request)
    fact_id = request.path_params["factId"]
    fact = await store.get(fact_id, agent_id, user_id)
    if fact is None:
        raise NotFound(f"no fact {fact_id!r} for agent {agent_id!r} and user {user_id!r}")
    return json_response(Fact.model_validate(fact))


async def fact_history(request: Request) -> Response:
    store, agent_id, user_id = _scope(request)
    entries = await store.history(request.path_params["factId"], agent_id, user_id)
    return json_response(FactHistory(history=entries))


async def delete_fact(request: Request) -> Response:
    """Retire the fact, then answer it as :func:`get_fact` would (retired now)."""
    store, agent_id, user_id = _scope(request)
    await store.delete(request.path_params["factId"], agent_id, user_id, reason="deleted over HTTP")
    return await get_fact(request)


def fact_routes() -> list[BaseRoute]:
    """The facts routes, for the app to mount."""
    import liz.http.path_segments  # noqa: F401  (registers the `segment` converter)

    return [
        Route(FACTS, list_or_search, methods=["GET"]),
        Route(FACTS + "/{factId}", get_fact, methods=["GET"]),
        Route(FACTS + "/{factId}/history", fact_history, methods=["GET"]),
        Route(FACTS + "/{factId}", delete_fact, methods=["DELETE"]),
    ]
