"""``POST /agent/input``: one message through the chain, answered as JSON or server-sent events.

Before the turn: the body is checked (``body``), the caller must be allowed to act
for the input's user (``auth``), and an ``Idempotency-Key`` is claimed or its stored
answer replayed (``idempotency``). The turn ends by ``LIZ_REQUEST_TIMEOUT``
(``deadline``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from liz.agent import BaseAgent
from liz.errors import LizError, LLMNotConfigured, NotFound
from liz.http.auth import caller_of
from liz.http.bodies import Trace, wire
from liz.http.body import read_input
from liz.http.deadline import within_deadline
from liz.http.error_responses import error_body, log_failure, request_id_of, retry_after_headers
from liz.http.idempotency import KeyClaim, Outcome, claim
from liz.http.trace_opt_in import wants_trace
from liz.pipeline import AgentFramework, AgentResponse
from liz.types import EventSink, InputObject, TokenSink


async def agent_input(request: Request) -> Response:
    input = await read_input(request)
    caller_of(request).check_may_act_as(input.user_id)
    traced = wants_trace(request)
    agents: Mapping[str, BaseAgent] = request.app.state.agents
    agent = agents.get(input.agent_id)
    if agent is None:
        raise NotFound(f"unknown agent {input.agent_id!r}; GET /agents lists the agents")
    framework: AgentFramework = request.app.state.framework
    if framework.runtime.llm_client is None:
        raise LLMNotConfigured()
    streaming = "text/event-stream" in request.headers.get("accept", "")
    key = await claim(request, framework.runtime, input)
    if isinstance(key, Outcome):
        return replay(key, streaming)
    if streaming:
        return StreamingResponse(
            stream_events(request, framework, input, agent, key, traced=traced),
            media_type="text/event-stream",
        )
    try:
        async with held(key):
            result, _ = await take_turn(request, framework, input, agent, key, traced=traced)
    except BaseException:
        if key is not None:
            await key.release()
        raise
    if key is not None:
        await key.record(result)
    return JSONResponse(result.body, status_code=result.status, headers=result.headers)


def held(key: KeyClaim | None) -> AbstractAsyncContextManager[None]:
    """The key's claim renewed while the turn runs (nothing to hold without a key)."""
    return key.held() if key is not None else contextlib.nullcontext()


def outcome(res: AgentResponse, *, traced: bool = False) -> dict[str, Any]:
    """The reply's JSON body (with ``trace`` when asked); ``process`` always ends with a
    reply or an error."""
    if res.reply is None:
        raise RuntimeError("a finished turn has neither reply nor error")
    reply = res.reply
    if traced:
        reply = reply.model_copy(update={"trace": Trace.model_validate(res.trace)})
    return wire(reply)


def failure(exc: LizError, request: Request) -> Outcome:
    log_failure(exc, request_id_of(request))
    return Outcome(exc.status, error_body(exc, request_id_of(request)), retry_after_headers(exc))


async def take_turn(
    request: Request,
    framework: AgentFramework,
    input: InputObject,
    agent: BaseAgent,
    key: KeyClaim | None,
    on_token: TokenSink | None = None,
    *,
    traced: bool = False,
    on_event: EventSink | None = None,
) -> tuple[Outcome, dict[str, Any] | None]:
    """Run the turn until the request's deadline: the reply (with its trace when asked),
    or the failure as an answer; and the trace on its own, for a stream. With a key, the
    input is stored under the key's id: a retry after a failure finds it stored."""
    input_memory_id = key.input_memory_id if key is not None else None
    try:
        async with within_deadline(request):
            res = await framework.process(
                input,
                agent,
                on_token=on_token,
                on_event=on_event,
                input_memory_id=input_memory_id,
            )
    except LizError as exc:  # the deadline passed
        return failure(exc, request), None
    trace = wire(Trace.model_validate(res.trace)) if traced else None
    if res.error is not None:
        return failure(res.error, request), trace
    return Outcome(200, outcome(res, traced=traced and on_token is None)), trace


def replay(stored: Outcome, streaming: bool) -> Response:
    """A retry's answer: the first request's, in the form this one asks for."""
    if not streaming:
        return JSONResponse(stored.body, status_code=stored.status, headers=stored.headers)
    event = sse("reply", stored.body) if stored.status == 200 else error_event(stored)
    return Response(event, media_type="text/event-stream", headers=stored.headers)


def sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def error_event(result: Outcome) -> str:
    return sse("error", {**result.body, "status": result.status})


async def stream_events(
    request: Request,
    framework: AgentFramework,
    input: InputObject,
    agent: BaseAgent,
    key: KeyClaim | None,
    *,
    traced: bool = False,
) -> AsyncIterator[str]:
    """``token`` events while the reply is written, then (when asked) one ``trace`` event,
    then one ``reply`` or ``error`` event.

    The turn runs to its end (or its deadline) even if the client goes away, so its
    memories are whole and a retry with the same ``Idempotency-Key`` gets its outcome.
    """
    events: asyncio.Queue[str | None] = asyncio.Queue()

    async def on_token(token: str) -> None:
        await events.put(sse("token", {"text": token}))

    async def on_event(name: str, data: dict[str, Any]) -> None:
        await events.put(sse(name, data))

    async def run() -> None:
        try:
            async with held(key):
                result, trace = await take_turn(
                    request,
                    framework,
                    input,
                    agent,
                    key,
                    on_token,
                    traced=traced,
                    on_event=on_event,
                )
            if trace is not None:
                await events.put(sse("trace", trace))
            if key is not None:
                await key.record(result)
            final = sse("reply", result.body) if result.status == 200 else error_event(result)
            await events.put(final)
        except BaseException:
            if key is not None:
                await key.release()
            raise
        finally:
            await events.put(None)

    turn = asyncio.create_task(run())
    try:
        while (event := await events.get()) is not None:
            yield event
    finally:
        await asyncio.shield(turn)
