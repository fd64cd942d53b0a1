"""A tool call, observed once: a span ``execute_tool {name}`` as the GenAI conventions name
it, and the call's outcome kept on the turn's record (``res.trace.tool_calls``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol, TypeVar

from opentelemetry.trace import Status, StatusCode

from liz.observe.tracing import span, tracing_on

if TYPE_CHECKING:
    from liz.runtime.turn_trace import Trace


class _Outcome(Protocol):
    @property
    def ok(self) -> bool: ...

    @property
    def error(self) -> str | None: ...


Outcome = TypeVar("Outcome", bound=_Outcome)


@contextmanager
def observe_tool_call(
    trace: Trace, name: str, call_id: str
) -> Iterator[Callable[[Outcome], Outcome]]:
    """Around one call the model asked for, run or refused; hand its outcome to the function
    yielded, which keeps it on the turn's record and on the span, and returns it."""
    attributes = None
    if tracing_on():
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
        }
    with span(f"execute_tool {name}", attributes) as current:

        def ended(outcome: Outcome) -> Outcome:
            trace.tool_calls.append(outcome)
            if current is not None:
                current.set_attribute("liz.tool.ok", outcome.ok)
                if not outcome.ok:  # the error text is the tool's, never the user's
                    current.set_attribute("error.type", "tool_error")
                    error = outcome.error or "the tool call failed"
                    current.set_status(Status(StatusCode.ERROR, error))
            return outcome

        yield ended
