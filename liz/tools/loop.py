"""The call loop: the model calls, liz runs the calls, the results go back, until it answers.

Calls in one answer run concurrently. A tool that needs approval is not run: the loop
stops there with the call pending; once a person decided, :meth:`ToolTurn.decide` runs
or refuses it and :meth:`ToolTurn.go_on` gives its outcome to the model.
The step limit ends a model that never stops calling with a reply that says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any

from liz.llm.calls import RequestedCall, TextSink
from liz.llm.client import LLMClient
from liz.tools.calls import CallOutcome, parsed_arguments, refused, run_call
from liz.tools.context import ToolContext
from liz.types import EventSink, Tool

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolLimits:
    max_steps: int = 8  # requests whose answer asks for calls, per turn
    call_timeout: float = 30.0  # seconds one call may take


@dataclass(frozen=True)
class PendingCall:
    """A call that waits for a person's approval, and the model's text before it."""

    call: RequestedCall
    text: str


@dataclass
class LoopEnd:
    """How a loop ended: the reply's text, every call made, and what waits for approval."""

    text: str
    messages: list[dict[str, Any]]
    calls: list[CallOutcome] = field(default_factory=list)
    pending: PendingCall | None = None


@dataclass
class ToolTurn:
    """What one turn's loop works with; ``can_approve`` is False where no person can decide."""

    llm: LLMClient
    tools: Mapping[str, Tool]
    ctx: ToolContext
    limits: ToolLimits = field(default_factory=ToolLimits)
    can_approve: bool = True
    on_text: TextSink | None = None
    on_event: EventSink | None = None

    async def run(self, messages: list[dict[str, Any]], calls: list[CallOutcome]) -> LoopEnd:
        """Go on from ``messages`` until the model answers, a call waits, or the limit."""
        specs = [tool.spec() for tool in self.tools.values()]
        for _ in range(self.limits.max_steps):
            step = await self.llm.tool_step(messages, specs, on_text=self.on_text)
            if not step.calls:
                return LoopEnd(step.text, messages, calls)
            messages.append(step.assistant_message())
            pending = await self._answer(step.calls, messages, calls)
            if pending is not None:
                return LoopEnd(step.text, messages, calls, PendingCall(pending, step.text))
        note = (
            f"I stopped: this turn reached its limit of {self.limits.max_steps} tool steps "
            "(LIZ_TOOL_MAX_STEPS) before I had an answer. Ask again, perhaps more narrowly."
        )
        logger.warning("turn for %s ended at the tool step limit", self.ctx.user_id)
        return LoopEnd(note, messages, calls)

    async def decide(self, call: RequestedCall, approve: bool) -> CallOutcome:
        """Run the call a person approved, or refuse the one they denied."""
        if not approve:
            return refused(call, "the user denied this call; it was not run", self.ctx)
        tool = self.tools.get(call.name)
        return await run_call(call, tool, self.ctx, list(self.tools), self.limits.call_timeout)

    async def go_on(self, messages: list[dict[str, Any]], decided: CallOutcome) -> LoopEnd:
        """Send the decided call and its outcome as events, give the outcome to the model,
        and go on with the loop."""
        told = {"id": decided.id, "name": decided.name, "arguments": decided.arguments}
        await self._event("tool_call", told)
        await self._event("tool_result", decided.result_event())
        messages.append(decided.message())
        return await self.run(messages, [decided])

    async def _answer(
        self, requested: list[RequestedCall], messages: list[dict[str, Any]], calls: list[Any]
    ) -> RequestedCall | None:
        pending: RequestedCall | None = None
        runs: list[Awaitable[CallOutcome]] = []
        for call in requested:
            await self._event("tool_call", _call_event(call))
            tool = self.tools.get(call.name)
            if tool is not None and tool.requires_approval:
                if not self.can_approve:
                    logger.info("skipped %s: it needs approval, no one here can give it", call.name)
                    runs.append(self._refuse(call, NO_APPROVER))
                    continue
                if pending is None:
                    pending = call
                    continue
                runs.append(self._refuse(call, ONE_AT_A_TIME))
                continue
            runs.append(self._run_one(call))
        for outcome in await asyncio.gather(*runs):
            calls.append(outcome)
            messages.append(outcome.message())
        return pending

    async def _run_one(self, call: RequestedCall) -> CallOutcome:
        tool = self.tools.get(call.name)
        outcome = await run_call(call, tool, self.ctx, list(self.tools), self.limits.call_timeout)
        await self._event("tool_result", outcome.result_event())
        return outcome

    async def _refuse(self, call: RequestedCall, reason: str) -> CallOutcome:
        outcome = refused(call, reason, self.ctx)
        await self._event("tool_result", outcome.result_event())
        return outcome

    async def _event(self, name: str, data: dict[str, Any]) -> None:
        if self.on_event is not None:
            await self.on_event(name, data)


NO_APPROVER = "not run: this tool needs a person's approval, which this conversation cannot give"
ONE_AT_A_TIME = "not run: one call needing approval is decided at a time; call it again after"


def _call_event(call: RequestedCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": parsed_arguments(call)}
