"""The chain's composition rules, ported from koa-compose's behaviour spec."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from liz.agent import BaseAgent
from liz.character import Character
from liz.errors import InputError, InternalError, LizError, UsageError
from liz.pipeline import AgentFramework, AgentRequest, AgentResponse, compose
from liz.runtime.services import Runtime
from liz.types import InputObject, Next

pytestmark = pytest.mark.anyio


def make_request(runtime: Runtime) -> tuple[AgentRequest, AgentResponse]:
    input = InputObject(user_id="u1", agent_id="a1", text="hello")
    agent = BaseAgent(Character(agent_id="a1", name="A"))
    return AgentRequest(input=input, agent=agent, runtime=runtime), AgentResponse(input)


def recorder(log: list[str], name: str) -> Any:
    async def step(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        log.append(f"{name} in")
        await next()
        log.append(f"{name} out")

    return step


async def test_steps_run_in_onion_order(bare_runtime: Runtime) -> None:
    log: list[str] = []
    chain = compose([recorder(log, "a"), recorder(log, "b"), recorder(log, "c")])
    await chain(*make_request(bare_runtime))
    assert log == ["a in", "b in", "c in", "c out", "b out", "a out"]


async def test_a_finished_request_is_freed_at_once(bare_runtime: Runtime) -> None:
    """Freed as its last reference goes, not left for the garbage collector: a server
    under load would otherwise hold every recent request's memories until a pass."""
    log: list[str] = []
    chain = compose([recorder(log, "a"), compose([recorder(log, "b")])])
    req, res = make_request(bare_runtime)
    gone = weakref.ref(req)
    gc.disable()
    try:
        await chain(req, res)
        del req, res
        assert gone() is None
    finally:
        gc.enable()


async def test_zero_middleware_runs_the_outer_next(bare_runtime: Runtime) -> None:
    called: list[bool] = []

    async def outer() -> None:
        called.append(True)

    req, res = make_request(bare_runtime)
    await compose([])(req, res, outer)
    assert called == [True]


def test_only_callables_are_accepted() -> None:
    with pytest.raises(TypeError, match="must be an async callable"):
        compose(["not a step"])  # type: ignore[list-item]


async def test_a_step_that_does_not_call_next_stops_the_chain(bare_runtime: Runtime) -> None:
    log: list[str] = []

    async def stop(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        log.append("stop")

    await compose([recorder(log, "a"), stop, recorder(log, "never")])(*make_request(bare_runtime))
    assert log == ["a in", "stop", "a out"]


async def test_next_twice_raises(bare_runtime: Runtime) -> None:
    async def twice(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        await next()
        await next()

    with pytest.raises(UsageError, match="next\\(\\) called multiple times"):
        await compose([twice])(*make_request(bare_runtime))


async def test_downstream_errors_are_caught_upstream(bare_runtime: Runtime) -> None:
    caught: list[str] = []

    async def catcher(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        try:
            await next()
        except ValueError as exc:
            caught.append(str(exc))

    async def boom(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        raise ValueError("downstream broke")

    await compose([catcher, boom])(*make_request(bare_runtime))
    assert caught == ["downstream broke"]


async def test_compositions_nest_and_keep_the_request(bare_runtime: Runtime) -> None:
    log: list[str] = []

    async def mark(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        req.state["seen"] = req.state.get("seen", 0) + 1
        await next()

    inner = compose([recorder(log, "inner"), mark])
    req, res = make_request(bare_runtime)
    await compose([recorder(log, "outer"), inner, mark])(req, res)
    assert log == ["outer in", "inner in", "inner out", "outer out"]
    assert req.state["seen"] == 2


async def test_the_original_list_is_not_mutated(bare_runtime: Runtime) -> None:
    steps = [recorder([], "a")]
    chain = compose(steps)
    steps.append("junk")  # type: ignore[arg-type]
    await chain(*make_request(bare_runtime))  # would raise if the junk had been picked up


async def test_a_composition_is_reentrant(bare_runtime: Runtime) -> None:
    async def reply(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        await res.send(req.input.text or "")

    chain = compose([reply])
    for _ in range(3):
        req, res = make_request(bare_runtime)
        await chain(req, res)
        assert res.reply is not None and res.reply.text == "hello"


def agent() -> BaseAgent:
    return BaseAgent(Character(agent_id="a1", name="A"))


async def test_process_turns_any_exception_into_one_error_response(bare_runtime: Runtime) -> None:
    seen: list[str] = []

    async def boom(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        await res.send("half an answer")
        raise RuntimeError("disk on fire")

    async def handler(exc: Exception, req: AgentRequest, res: AgentResponse) -> None:
        seen.append(str(exc))

    framework = AgentFramework(bare_runtime).use(boom).on_error(handler)
    res = await framework.process(InputObject(user_id="u", agent_id="a1", text="x"), agent())
    assert res.reply is None
    assert isinstance(res.error, InternalError) and res.error.status == 500
    # The caller's message leaks nothing; the details are kept for the log.
    assert res.error.message == "internal error"
    assert res.error.detail == "RuntimeError: disk on fire"
    assert seen == ["disk on fire"]


async def test_process_keeps_the_status_of_our_own_errors(bare_runtime: Runtime) -> None:
    async def refuse(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        raise InputError("text is required")

    framework = AgentFramework(bare_runtime).use(refuse)
    res = await framework.process(InputObject(user_id="u", agent_id="a1"), agent())
    assert res.error is not None
    assert (res.error.status, res.error.message) == (400, "text is required")


async def test_a_chain_that_never_replies_is_an_error_not_a_hang(bare_runtime: Runtime) -> None:
    async def silent(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        await next()

    res = (
        await AgentFramework(bare_runtime)
        .use(silent)
        .process(InputObject(user_id="u", agent_id="a1", text="x"), agent())
    )
    assert isinstance(res.error, LizError)
    assert "without sending a reply" in res.error.message


async def test_sending_twice_is_refused(bare_runtime: Runtime) -> None:
    async def twice(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        await res.send("one")
        await res.send("two")

    res = (
        await AgentFramework(bare_runtime)
        .use(twice)
        .process(InputObject(user_id="u", agent_id="a1", text="x"), agent())
    )
    assert res.reply is None
    assert res.error is not None and "already sent" in res.error.message


async def test_use_refuses_a_non_callable(bare_runtime: Runtime) -> None:
    with pytest.raises(TypeError):
        AgentFramework(bare_runtime).use(42)  # type: ignore[arg-type]
