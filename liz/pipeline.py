"""The middleware chain every message runs through, composed as koa-compose does.

A middleware is any ``async def step(req, res, next)``. It may stop the chain
by not calling ``next``; calling ``next`` twice is an error; an exception
anywhere reaches the framework's error handlers and becomes one error response.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Protocol

from liz.db.health import outage_log
from liz.errors import LizError, StorageError, UsageError
from liz.errors.caller import as_liz_error
from liz.observe.turn_observation import observe_turn, store_usage
from liz.observe.usage import metering
from liz.runtime.services import Runtime
from liz.runtime.turn_trace import Trace
from liz.types import AgentReply, EventSink, InputObject, Memory, Next, TokenSink, Tool

if TYPE_CHECKING:
    from liz.character import Character
    from liz.db.driver import Bound
    from liz.facts.domain import Fact
    from liz.prompts.templates import PromptTemplates
    from liz.types import RouteChoice

logger = logging.getLogger(__name__)

Middleware = Callable[["AgentRequest", "AgentResponse", Next], Awaitable[None]]
RouteHandler = Callable[["AgentRequest", "AgentResponse"], Awaitable[None]]
ErrorHandler = Callable[[Exception, "AgentRequest", "AgentResponse"], Awaitable[None]]
# Statements to commit with the stored reply, built from it (a connector's outbox rows).
ReplyStatements = Callable[[AgentReply], Sequence["Bound"]]


@dataclass(frozen=True)
class Route:
    """Something an agent can do with an input; the router picks one by name.

    `internal_only` routes are offered to the router only for inputs from an
    internal source (the bot loop, the CLI), never for text sent over HTTP.
    """

    name: str
    description: str
    handler: RouteHandler
    internal_only: bool = False


class Agent(Protocol):
    """What the chain uses of an agent; :class:`liz.agent.BaseAgent` is one."""

    character: Character
    templates: PromptTemplates
    middleware: list[Middleware]

    @property
    def agent_id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def tools(self) -> Mapping[str, Tool]: ...

    def get_routes(self) -> list[Route]: ...

    def get_system_prompt(self) -> str: ...

    def get_agent_context(self, today: date | None = None) -> str: ...


@dataclass
class AgentRequest:
    """Everything one message carries down the chain. Per-request state lives here.

    The standard steps fill it in order; a step of yours reads what the steps before it
    left (``req.memories`` after ``load_memories``, ``req.facts`` after ``recall_facts``).
    """

    input: InputObject
    """The message: who sent it to which agent, its text and images."""
    agent: Agent
    """The agent the message is for."""
    runtime: Runtime
    """The process's services: settings, database sessions, the LLM, the clock."""
    memories: list[Memory] = field(default_factory=list)
    """The recent conversation, newest first (``load_memories``)."""
    facts: list[Fact] = field(default_factory=list)
    """What is known about the user, best match first (``recall_facts``)."""
    context: str = ""
    """The prompt the route sends (``wrap_context``)."""
    input_memory_id: str | None = None
    """The stored message's id: set by ``create_memory``, or before the chain by a caller
    that may send the same input again (an Idempotency-Key), so a retry stores it once."""
    route_choice: RouteChoice | None = None
    """The router's pick and its reasons, when it asked the LLM (``router``)."""
    state: dict[str, Any] = field(default_factory=dict)
    """Your own middleware's per-request data; the standard steps never use it."""
    dry_run: bool = False
    """A rehearsal (the bot's ``--dry-run``): steps do their work but store nothing."""


class AgentResponse:
    """Collects exactly one outcome: a reply (``send``) or an error (``fail``).

    A step reads the reply after ``await next()``: ``res.reply.text`` (``res.reply`` is
    None when the turn failed; ``res.error`` then says why). When the caller streams
    (``on_token``), a route may ``emit`` the reply's text as it is generated; it still
    ends with ``send`` of the whole text.
    """

    def __init__(
        self,
        input: InputObject,
        *,
        on_token: TokenSink | None = None,
        on_event: EventSink | None = None,
    ) -> None:
        self._input = input
        self._on_token = on_token
        self._on_event = on_event
        # More of the reply's content for the conversation log (a turn's tool calls).
        self.memory_extras: dict[str, Any] = {}
        self.trace = Trace()
        """What the turn did: the steps, the LLM calls, the route, the facts recalled."""
        self.reply: AgentReply | None = None
        """The reply sent (its ``text``, ``route``, ...); None until then, or after a failure."""
        self.kind = "text"
        """The type the reply is stored with in the conversation log (``text``, ``tweet``)."""
        self.error: LizError | None = None
        """The error that ended the turn, if one did; the caller gets it as one clean answer."""
        # Committed in the reply's own transaction by create_memory, which then sets
        # ``stored_with_reply``; a chain without it leaves that to the caller.
        self.with_reply: ReplyStatements | None = None
        self.stored_with_reply = False

    @property
    def streaming(self) -> bool:
        return self._on_token is not None

    async def emit(self, token: str) -> None:
        if self._on_token is not None and not self.done:
            await self._on_token(token)

    async def emit_event(self, name: str, data: dict[str, Any]) -> None:
        """A named event among the tokens, for streaming callers (``tool_call``...)."""
        if self._on_event is not None and not self.done:
            await self._on_event(name, data)

    @property
    def done(self) -> bool:
        return self.reply is not None or self.error is not None

    async def send(self, text: str, *, route: str | None = None, kind: str = "text") -> None:
        """Answer with ``text``: a step that sends and does not call ``next()`` ends the
        turn there (``await res.send("Let's keep it calm.")``). Sending twice is a
        :class:`liz.errors.UsageError`."""
        if self.done:
            raise UsageError("res.send() called after the response was already sent or failed")
        self.kind = kind
        self.reply = AgentReply(
            text=text,
            route=route,
            agent_id=self._input.agent_id,
            user_id=self._input.user_id,
            room_id=self._input.room,
        )

    def fail(self, error: LizError) -> None:
        """Replace whatever was sent with an error; the last error wins."""
        self.reply = None
        self.error = error


def compose(middleware: Sequence[Middleware]) -> Middleware:
    """Compose steps into one step. The result is itself a middleware, so chains nest.

    >>> from liz.middleware import load_memories, router, validate_input
    >>> chain = compose([validate_input, load_memories(limit=50), router])
    >>> compose([validate_input, "router"])
    Traceback (most recent call last):
    ...
    TypeError: middleware must be an async callable, got 'router'
    """
    steps = list(middleware)
    _check_callables(steps)

    async def composed(req: AgentRequest, res: AgentResponse, next: Next | None = None) -> None:
        await _Run(steps, req, res, next).step(0)

    return composed


class _Run:
    """One run of a composed chain through its steps.

    A class, not a closure that calls itself: such a closure is a reference cycle, which
    would keep every request (its memories, its trace) alive until the garbage collector
    came by.
    """

    __slots__ = ("last_called", "next", "req", "res", "steps")

    def __init__(
        self, steps: list[Middleware], req: AgentRequest, res: AgentResponse, next: Next | None
    ) -> None:
        self.steps, self.req, self.res, self.next = steps, req, res, next
        self.last_called = -1

    async def step(self, index: int) -> None:
        if index <= self.last_called:
            raise UsageError("next() called multiple times")
        self.last_called = index
        if index == len(self.steps):
            if self.next is not None:
                await self.next()
            return
        await self.res.trace.run_step(
            self.steps[index], self.req, self.res, lambda: self.step(index + 1)
        )


def _check_callables(middleware: Sequence[Middleware]) -> None:
    for step in middleware:
        if not callable(step):
            raise TypeError(f"middleware must be an async callable, got {step!r}")


async def _chain_end() -> None:
    """What the last step's ``next`` does: nothing."""


class AgentFramework:
    """Holds the chain and the runtime; the HTTP app, CLI and bot loop all call ``process``.

    Each input runs through the steps given to ``use`` (in order), then its agent's
    own steps (``agent.use``), then ``chain`` (the standard steps, when an
    :class:`liz.App` builds the framework).
    """

    def __init__(self, runtime: Runtime, chain: Sequence[Middleware] = ()) -> None:
        self.runtime = runtime
        self._middleware: list[Middleware] = []
        self._chain = list(chain)
        _check_callables(self._chain)
        self._error_handlers: list[ErrorHandler] = []

    def use(self, *middleware: Middleware) -> AgentFramework:
        _check_callables(middleware)
        self._middleware.extend(middleware)
        return self

    def on_error(self, handler: ErrorHandler) -> AgentFramework:
        self._error_handlers.append(handler)
        return self

    @property
    def middleware(self) -> tuple[Middleware, ...]:
        """Every step an input runs through, but the agents' own."""
        return (*self._middleware, *self._chain)

    async def process(
        self,
        input: InputObject,
        agent: Agent,
        *,
        on_token: TokenSink | None = None,
        on_event: EventSink | None = None,
        dry_run: bool = False,
        input_memory_id: str | None = None,
        with_reply: ReplyStatements | None = None,
    ) -> AgentResponse:
        """Run one input through the chain; always returns a reply or an error, never raises.

        ``on_token`` receives the reply's text as routes generate it (server-sent events).
        With ``dry_run`` the reply is generated but nothing is stored. ``input_memory_id``
        names the id the input is stored under: a second run with the same id (a retry
        after a failure) finds the input stored and only adds the reply. ``with_reply``
        builds statements committed in the reply's own transaction (see
        :attr:`AgentResponse.with_reply`).
        """
        chain = compose([*self._middleware, *agent.middleware, *self._chain])
        req = AgentRequest(
            input=input,
            agent=agent,
            runtime=self.runtime,
            dry_run=dry_run,
            input_memory_id=input_memory_id,
        )
        res = AgentResponse(input, on_token=on_token, on_event=on_event)
        res.with_reply = with_reply
        started = time.perf_counter()
        with (
            observe_turn(input, agent.name) as turn,
            self.runtime.turns.one(),
            res.trace.recording(),
            metering(res.trace.usage, agent_id=input.agent_id),
        ):
            try:
                # Over a daily budget: refused before any LLM call, with nothing stored.
                await self.runtime.budgets.check(input.agent_id, input.user_id)
                await chain(req, res, _chain_end)
            except Exception as exc:
                turn.failed(exc)
                await self._handle_error(exc, req, res)
            if not res.done:
                res.fail(LizError("the middleware chain ended without sending a reply", status=500))
            elif res.error is None:
                outage_log(self.runtime.engine).succeeded()
            asked_for = req.input.route if req.input.source.is_internal else None
            route = None if res.reply is None else res.reply.route
            res.trace.finish(req.facts, route, choice=req.route_choice, asked_for=asked_for)
            if not dry_run:
                await store_usage(
                    self.runtime.engine,
                    self.runtime.clock.now(),
                    input.agent_id,
                    input.user_id,
                    res.trace.usage,
                    "the turn's",
                )
            turn.end(route, res.error, res.trace, time.perf_counter() - started)
        return res

    async def _handle_error(self, exc: Exception, req: AgentRequest, res: AgentResponse) -> None:
        # The caller sees a message that leaks nothing (no SQL, no parameters); the log
        # gets the whole exception.
        error = as_liz_error(exc)
        if isinstance(error, StorageError):  # an outage: a few lines, not one per request
            outage_log(self.runtime.engine).failed(exc, error.message)
        elif error is exc:
            logger.warning("request failed: %s", error.message)
        else:
            logger.error("request failed: %s", error.message, exc_info=exc)
        res.fail(error)
        for handler in self._error_handlers:
            try:
                await handler(exc, req, res)
            except Exception:
                logger.exception("error handler %r failed", handler)
