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
from liz.pipeline import AgentFramework, AgentResponse
from liz.types import InputObject


async def agent_input(request: Request) -> Response:
    input = await read_input(request)
    agents: Mapping[str, BaseAgent] = request.app.state.agents
    agent = agents.get(input.agent_id)
    if agent is None:
        raise NotFound(f"unknown agent {input.agent_id!r}; GET /agents lists the agents")
    framework: AgentFramework = request.app.state.framework
    if framework.runtime.llm_client is None:
        raise LLMNotConfigured()
    if "text/event-stream" in request.headers.get("accept", ""):
        return StreamingResponse(
            stream_events(framework, input, agent), media_type="text/event-stream"
        )
    res = await framework.process(input, agent)
    if res.error is not None:
        raise res.error
    return JSONResponse(outcome(res))


def outcome(res: AgentResponse) -> dict[str, Any]:
    """The reply's JSON body; ``process`` always ends with a reply or an error."""
    if res.reply is None:
        raise RuntimeError("a finished turn has neither reply nor error")
    return res.reply.to_json_dict()


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
