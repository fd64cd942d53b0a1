"""What one turn did, as data: the LLM calls it made, the route, the facts, each step's time.

Every call to ``AgentFramework.process`` fills a :class:`Trace` on ``res.trace``: the
messages each LLM call was sent (``llm_calls``), the route and why (``route``), the
facts recalled with their scores (``recalled_facts``), each step's own time (``steps``).

The LLM client is shared by every request, so it does not hold the trace: while a
turn runs, the LLM call's one hook (:func:`liz.observe.genai.llm_call`) finds it with
:func:`record_llm_call`, in a context variable that ``process`` sets. Only calls
made by the turn's own task are kept, so work the turn leaves behind (background
learning) never writes into a trace already handed out.
HTTP callers get the trace only when they ask (``?trace=1``, see the README).
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from liz.observe.usage import UsageMeter

if TYPE_CHECKING:
    from liz.types import Next, RouteChoice

# The chain's request and response; the trace reads nothing of them.
Req = TypeVar("Req")
Res = TypeVar("Res")


class _Recalled(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def score(self) -> float | None: ...


RouteChosenBy = Literal["router", "only_route", "caller"]


@dataclass(frozen=True)
class LLMCall:
    """One chat request, as sent: the step that made it, the model and every message."""

    step: str | None
    model: str
    messages: list[dict[str, Any]]
    streamed: bool
    schema: str | None  # the structured answer's schema name; None for plain text


@dataclass
class StepTiming:
    """How long one middleware step took.

    ``total_ms`` runs from entering the step to its return, the steps after it
    (inside its ``next()``) included; ``own_ms`` leaves them out. ``depth`` is 1
    and more for steps of a composition nested in another. With tracing on, each step is
    also an event on the turn's span (liz.observe.turn_observation).
    """

    step: str
    depth: int
    total_ms: float = 0.0
    own_ms: float = 0.0
    started_ns: int = field(default=0, repr=False)  # wall clock, for the span's event


@dataclass(frozen=True)
class RouteTrace:
    """The route that produced the reply and how it was picked.

    ``chosen_by`` is ``router`` (the LLM picked among several, with its confidence
    and reasoning), ``only_route`` (one route was open, no LLM was asked) or
    ``caller`` (an internal caller named it, as the bot loop does).
    """

    name: str
    chosen_by: RouteChosenBy
    confidence: float | None = None
    reasoning: str | None = None


@dataclass(frozen=True)
class RecalledFact:
    """A fact ``recall_facts`` put in the prompt, with its similarity to the input."""

    id: str
    text: str
    score: float | None


@dataclass
class Trace:
    """What one turn did. Filled while the chain runs; complete once ``process`` returns."""

    steps: list[StepTiming] = field(default_factory=list)
    llm_calls: list[LLMCall] = field(default_factory=list)
    route: RouteTrace | None = None
    recalled_facts: list[RecalledFact] = field(default_factory=list)
    # Each tool call, as it ended (liz.tools.calls.CallOutcome).
    tool_calls: list[Any] = field(default_factory=list)
    # The tokens of each LLM call the turn made, as the provider reported them.
    usage: UsageMeter = field(default_factory=UsageMeter)
    _active: list[str] = field(default_factory=list, repr=False)
    _task: asyncio.Task[Any] | None = field(default=None, repr=False)

    async def run_step(
        self, step: Callable[[Req, Res, Next], Awaitable[None]], req: Req, res: Res, next: Next
    ) -> None:
        """Run one step of a chain and time it (``compose`` calls this for every step)."""
        timing = StepTiming(step_name(step), len(self._active), started_ns=time.time_ns())
        self.steps.append(timing)
        downstream = 0.0

        async def timed_next() -> None:
            nonlocal downstream
            name = self._active.pop()
            started = time.perf_counter()
            try:
                await next()
            finally:
                downstream += time.perf_counter() - started
                self._active.append(name)

        self._active.append(timing.step)
        started = time.perf_counter()
        try:
            await step(req, res, timed_next)
        finally:
            self._active.pop()
            total = time.perf_counter() - started
            timing.total_ms = total * 1000
            timing.own_ms = (total - downstream) * 1000

    @contextmanager
    def recording(self) -> Iterator[Trace]:
        """While the block runs, LLM calls made by this task are kept on this trace."""
        self._task = asyncio.current_task()
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)
            self._task = None

    def finish(
        self,
        recalled: Sequence[_Recalled],
        route: str | None,
        *,
        choice: RouteChoice | None,
        asked_for: str | None,
    ) -> None:
        """Keep what the chain decided: the facts recalled, the reply's route and who chose
        it (``choice``: the router's answer; ``asked_for``: the route an internal caller named)."""
        self.recalled_facts = [RecalledFact(f.id, f.text, f.score) for f in recalled]
        if route is None:
            return
        if choice is not None and choice.route == route:
            self.route = RouteTrace(route, "router", choice.confidence, choice.reasoning)
        elif asked_for == route:
            self.route = RouteTrace(route, "caller")
        else:
            self.route = RouteTrace(route, "only_route")


_current: ContextVar[Trace | None] = ContextVar("liz_trace", default=None)


def record_llm_call(
    model: str,
    messages: Sequence[dict[str, Any]],
    *,
    streamed: bool,
    response_format: dict[str, Any] | None = None,
) -> None:
    """Keep a chat request on the running turn's trace; outside a turn, do nothing.

    Called by the LLM call's hook (liz.observe.genai.llm_call), never on its own."""
    trace = _current.get()
    if trace is None or trace._task is not asyncio.current_task():
        return
    schema = None
    if response_format is not None:
        schema = response_format.get("json_schema", {}).get("name") or response_format.get("type")
    step = trace._active[-1] if trace._active else None
    trace.llm_calls.append(LLMCall(step, model, copy.deepcopy(list(messages)), streamed, schema))


def step_name(step: object) -> str:
    """A step's name: ``router``; ``load_memories.load`` for the step ``load_memories()`` made."""
    qualname = getattr(step, "__qualname__", None) or type(step).__qualname__
    return str(qualname).replace(".<locals>", "")
