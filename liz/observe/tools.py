"""A tool call, observed: a span ``execute_tool {name}`` as the GenAI conventions name it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.trace import Span, Status, StatusCode

from liz.observe.tracing import span


@contextmanager
def tool_span(name: str, call_id: str) -> Iterator[Span | None]:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
    }
    with span(f"execute_tool {name}", attributes) as current:
        yield current


def tool_outcome(current: Span | None, ok: bool, error: str | None) -> None:
    """Mark a failed call on its span (its error text is the tool's, never the user's)."""
    if current is None:
        return
    current.set_attribute("liz.tool.ok", ok)
    if not ok:
        current.set_status(Status(StatusCode.ERROR, error or "the tool call failed"))
