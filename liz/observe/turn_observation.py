"""A turn, observed: its span (agent, room, source, route, outcome, tokens), each chain step
an event on it, the turn's metrics, and its usage rows.

The turn is one ``invoke_agent`` span, as the GenAI conventions have it. Its steps are not
spans of their own: each is an event ``liz.step`` (name, time with and without the steps
after it, depth when nested), made from the turn's record (liz.runtime.turn_trace) when it ends.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from opentelemetry.trace import Span, Status, StatusCode
from sqlalchemy import Executable
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.driver import connect
from liz.db.usage import usage_statements
from liz.observe import metrics
from liz.observe.tracing import span, tracing_on
from liz.observe.usage import UsageMeter

if TYPE_CHECKING:
    from liz.errors import LizError
    from liz.runtime.turn_trace import StepTiming, Trace
    from liz.types import InputObject

logger = logging.getLogger(__name__)


@dataclass
class ObservedTurn:
    agent_id: str
    span: Span | None

    def failed(self, exc: Exception) -> None:
        """An exception reached the chain's error handling: the span keeps it as an event."""
        if self.span is not None:
            self.span.record_exception(exc)
            self.span.set_attribute("error.type", type(exc).__qualname__)

    def end(self, route: str | None, error: LizError | None, trace: Trace, seconds: float) -> None:
        """Record the turn's outcome, and its steps as events, on its span and in the metrics."""
        status = "ok" if error is None else str(error.status)
        metrics.turn(self.agent_id, route, status, seconds)
        if self.span is None:
            return
        for step in trace.steps:
            self.span.add_event("liz.step", _step_attributes(step), step.started_ns or None)
        usage = trace.usage
        self.span.set_attributes(
            {
                "liz.route": route or "",
                "liz.outcome": "reply" if error is None else "error",
                "liz.status": status,
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
            }
        )
        if error is not None and error.status >= 500:
            self.span.set_status(Status(StatusCode.ERROR, error.message))


def _step_attributes(step: StepTiming) -> dict[str, str | int | float]:
    # Few attributes: the exporter encodes every attribute of every event, one by one.
    attributes: dict[str, str | int | float] = {
        "liz.step.name": step.step,
        "liz.step.duration_ms": round(step.total_ms, 3),
        "liz.step.own_ms": round(step.own_ms, 3),
    }
    if step.depth:
        attributes["liz.step.depth"] = step.depth
    return attributes


@contextmanager
def observe_turn(input: InputObject, agent_name: str) -> Iterator[ObservedTurn]:
    """The turn's span around the block (its LLM calls', tools' and memory's are children)."""
    if not tracing_on():
        yield ObservedTurn(input.agent_id, None)
        return
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": input.agent_id,
        "gen_ai.agent.name": agent_name,
        "gen_ai.conversation.id": input.room,
        "liz.source": str(input.source),
    }
    with span(f"invoke_agent {agent_name}", attributes) as current:
        recording = current if current is not None and current.is_recording() else None
        yield ObservedTurn(input.agent_id, recording)


async def store_usage(
    engine: AsyncEngine,
    at: datetime,
    agent_id: str,
    user_id: str,
    usage: UsageMeter,
    whose: str,
) -> None:
    """Add the tokens not stored yet (``whose``: the turn's, a learning job's) to the usage
    table; a failure is logged and changes nothing else."""
    calls = usage.unstored()
    if not calls:
        return
    try:
        async with connect(engine) as db:
            await db.commit(*usage_statements(calls, agent_id=agent_id, user_id=user_id, at=at))
    except Exception as exc:
        logger.warning("%s token usage was not stored: %r", whose, exc)
        return
    usage.stored = len(usage.calls)


@dataclass
class UsageInCommit:
    """A learning job's token usage, written in the facts' own transaction
    (``ExtraStatement(made_at_commit=spent.statements)``): made when the transaction
    runs, so every call the write needed is in it; :meth:`committed` after the commit."""

    usage: UsageMeter
    agent_id: str
    user_id: str
    at: datetime
    _written: int = 0

    def statements(self) -> list[Executable]:
        calls = self.usage.unstored()
        self._written = len(self.usage.calls)
        spent = usage_statements(calls, agent_id=self.agent_id, user_id=self.user_id, at=self.at)
        return [bound.executable() for bound in spent]

    def committed(self) -> None:
        self.usage.stored = max(self.usage.stored, self._written)
