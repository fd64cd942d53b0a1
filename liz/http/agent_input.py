"""``POST /agent/input``: one message through the chain, answered as JSON or server-sent events."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from liz.agent import BaseAgent
from liz.errors import LLMNotConfigured, NotFound
from liz.http.body import read_input
from liz.http.trace_opt_in import wants_trace
from liz.pipeline import AgentFramework, AgentResponse
from liz.types import InputObject


async def agent_input(request: Request) -> Response:
    input = await read_input(request)
    traced = wants_trace(request)
    agents: Mapping[str, BaseAgent] = request.app.state.agents
    agent = agents.get(input.agent_id)
    if agent is None:
        raise NotFound(f"unknown agent {input.agent_id!r}; GET /agents lists the agents")
    framework: AgentFramework = request.app.state.framework
    if framework.runtime.llm_client is None:
        raise LLMNotConfigured()
    if "text/event-stream" in request.headers.get("accept", ""):
        return StreamingResponse(
            stream_events(framework, input, agent, traced=traced), media_type="text/event-stream"
        )
    res = await framework.process(input, agent)
    if res.error is not None:
        raise res.error
    return JSONResponse(outcome(res, traced=traced))


def outcome(res: AgentResponse, *, traced: bool = False) -> dict[str, Any]:
    """The reply's JSON body (with ``trace`` when asked); ``process`` always ends with a
    reply or an error."""
    if res.reply is None:
        raise RuntimeError("a finished turn has neither reply nor error")
    body = res.reply.to_json_dict()
    return {**body, "trace": res.trace.to_json_dict()} if traced else body


def sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


async def stream_events(
    framework: AgentFramework, input: InputObject, agent: BaseAgent, *, traced: bool = False
) -> AsyncIterator[str]:
    """``token`` events while the reply is written, then (when asked) one ``trace`` event,
    then one ``reply`` or ``error`` event.

    The turn runs to its end even if the client goes away, so its memories are whole.
    """
    events: asyncio.Queue[str | None] = asyncio.Queue()

    async def on_token(token: str) -> None:
        await events.put(sse("token", {"text": token}))

    async def run() -> None:
        try:
            res = await framework.process(input, agent, on_token=on_token)
            if traced:
                await events.put(sse("trace", res.trace.to_json_dict()))
            if res.error is not None:
                failure = {"error": res.error.message, "status": res.error.status}
                await events.put(sse("error", failure))
            else:
                await events.put(sse("reply", outcome(res)))
        finally:
            await events.put(None)

    turn = asyncio.create_task(run())
    try:
        while (event := await events.get()) is not None:
            yield event
    finally:
        await asyncio.shield(turn)
