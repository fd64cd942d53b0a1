"""A learning job, observed: its ``traceparent`` kept with the job, its span linked to it.

The turn that queues a job stores where it was in its trace (the W3C ``traceparent``)
with the job's row; whichever process learns the job later opens a span of its own,
a new trace, linked to that turn, and meters the job's LLM calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from opentelemetry.context import Context
from opentelemetry.trace import Link, get_current_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from liz.observe.tracing import span, tracing_on
from liz.observe.usage import UsageMeter, metering

_propagator = TraceContextTextMapPropagator()


def current_traceparent() -> str | None:
    """Where the running span is, as a ``traceparent`` header value; None when not traced."""
    if not tracing_on():
        return None
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier.get("traceparent")


def _links(traceparents: Iterable[str | None]) -> list[Link]:
    links = []
    for traceparent in traceparents:
        if not traceparent:
            continue
        context = get_current_span(_propagator.extract({"traceparent": traceparent}))
        span_context = context.get_span_context()
        if span_context.is_valid:
            links.append(Link(span_context))
    return links


@contextmanager
def observe_learning(
    agent_id: str, traceparents: Iterable[str | None], *, jobs: int
) -> Iterator[UsageMeter]:
    """A root span ``learn facts`` linked to the turns that queued the jobs, and a meter."""
    links = _links(traceparents) if tracing_on() else []
    attributes = {"gen_ai.agent.id": agent_id, "liz.learning.jobs": jobs}
    with (
        span("learn facts", attributes, context=Context(), links=links),
        metering(agent_id=agent_id) as meter,
    ):
        yield meter
