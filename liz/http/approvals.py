"""``POST /agent/approvals/{id}``: approve or deny a tool call a turn left waiting.

Only the approval's own user (by token) or the server key may decide. The tool then
runs (or is refused), the model writes the reply, and the answer is JSON or, with
``Accept: text/event-stream``, the same events as ``POST /agent/input``. When the
model fails after the call ran, the answer is that failure (502 or 503) and the same
decision sent again gets the reply; the call is not run again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from liz.agent import BaseAgent
from liz.errors import InputError, LizError, LLMNotConfigured, NotFound
from liz.http.agent_input import sse
from liz.http.auth import caller_of
from liz.http.bodies import json_response, wire
from liz.http.error_responses import error_body, log_failure, request_id_of
from liz.pipeline import AgentFramework
from liz.tools.approvals import claim_decision, load_approval, resume
from liz.tools.turn import decision_turn


async def decide_approval(request: Request) -> Response:
    approve = await _read_approve(request)
    framework: AgentFramework = request.app.state.framework
    runtime = framework.runtime
    approval = await load_approval(runtime, request.path_params["approval_id"])
    caller_of(request).check_may_act_as(approval.user_id)
    agents: Mapping[str, BaseAgent] = request.app.state.agents
    agent = agents.get(approval.agent_id)
    if agent is None:
        raise NotFound(f"the agent {approval.agent_id!r} of this approval is not served here")
    if runtime.llm_client is None:
        raise LLMNotConfigured()
    # The decision lets the model write again: over a daily budget it waits, undecided.
    await runtime.budgets.check(approval.agent_id, approval.user_id)
    decision = await claim_decision(runtime, approval, approve)

    if "text/event-stream" not in request.headers.get("accept", ""):
        reply = await resume(decision_turn(runtime, agent, approval), runtime, decision)
        return json_response(reply)
    events: asyncio.Queue[str | None] = asyncio.Queue()

    async def on_text(text: str) -> None:
        await events.put(sse("token", {"text": text}))

    async def on_event(name: str, data: dict[str, Any]) -> None:
        await events.put(sse(name, data))

    async def run() -> None:
        try:
            turn = decision_turn(runtime, agent, approval, on_text=on_text, on_event=on_event)
            reply = await resume(turn, runtime, decision)
            await events.put(sse("reply", wire(reply)))
        except LizError as exc:
            log_failure(exc, request_id_of(request))
            await events.put(
                sse("error", {**error_body(exc, request_id_of(request)), "status": exc.status})
            )
        finally:
            await events.put(None)

    async def stream() -> AsyncIterator[str]:
        task = asyncio.create_task(run())
        try:
            while (event := await events.get()) is not None:
                yield event
        finally:
            await asyncio.shield(task)

    return StreamingResponse(stream(), media_type="text/event-stream")


async def _read_approve(request: Request) -> bool:
    try:
        body = json.loads(await request.body())
    except ValueError:
        body = None
    if not isinstance(body, dict) or not isinstance(body.get("approve"), bool):
        raise InputError('send {"approve": true} to run the call or {"approve": false} to deny it')
    return bool(body["approve"])
