"""A route's LLM step with the agent's tools: the call loop, then the reply.

Any route may call :func:`answer_with_tools` in place of ``llm.text``; the conversation
route does when its agent has tools. A call that waits for approval ends the turn with
a reply carrying ``pendingApproval``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from liz.llm.messages import build_messages
from liz.runtime.turn_trace import Trace
from liz.tools.approvals import pending_approval
from liz.tools.context import ToolContext
from liz.tools.loop import LoopEnd, ToolLimits, ToolTurn
from liz.types import EventSink, InputSource, PendingApproval, TokenSink

if TYPE_CHECKING:
    from liz.config import Settings
    from liz.db.tool_approvals import StoredApproval
    from liz.pipeline import Agent, AgentRequest, AgentResponse
    from liz.runtime.services import Runtime

# Inputs a person can answer: an approval asked of a mention on X would reach no one.
APPROVING_SOURCES = frozenset({InputSource.NETWORK, InputSource.CLI})


def limits_of(settings: Settings) -> ToolLimits:
    return ToolLimits(max_steps=settings.liz_tool_max_steps, call_timeout=settings.liz_tool_timeout)


def tool_turn(req: AgentRequest, res: AgentResponse) -> ToolTurn:
    """The loop for this turn, streaming into ``res`` when the caller streams."""
    ctx = ToolContext(req.runtime, req.agent, req.input.user_id, req.input.room, res.trace)
    return ToolTurn(
        llm=req.runtime.llm,
        tools=req.agent.tools,
        ctx=ctx,
        limits=limits_of(req.runtime.settings),
        can_approve=req.input.source in APPROVING_SOURCES,
        on_text=res.emit if res.streaming else None,
        on_event=res.emit_event,
    )


def decision_turn(
    runtime: Runtime,
    agent: Agent,
    approval: StoredApproval,
    *,
    on_text: TokenSink | None = None,
    on_event: EventSink | None = None,
) -> ToolTurn:
    """The loop that carries on ``approval``'s turn once a person decided its call."""
    ctx = ToolContext(runtime, agent, approval.user_id, approval.room_id, Trace())
    return ToolTurn(
        runtime.llm,
        agent.tools,
        ctx,
        limits_of(runtime.settings),
        on_text=on_text,
        on_event=on_event,
    )


async def answer_with_tools(req: AgentRequest, res: AgentResponse) -> None:
    """Answer ``req.context`` with the agent's tools at hand, and send the reply."""
    messages = build_messages(
        req.context, system=req.agent.get_system_prompt(), image_urls=req.input.image_urls
    )
    end = await tool_turn(req, res).run(messages, [])
    pending = None
    if end.pending is not None and not req.dry_run:
        pending = await pending_approval(req.runtime, req.input, end)
    await send_end(res, end, pending)


async def send_end(res: AgentResponse, end: LoopEnd, pending: PendingApproval | None) -> None:
    """Send the loop's reply, its calls kept for the conversation log."""
    if end.calls:
        calls = [call.model_dump(mode="json", by_alias=True) for call in end.calls]
        res.memory_extras["toolCalls"] = calls
    if pending is not None:
        res.memory_extras["pendingApproval"] = pending.model_dump(mode="json", by_alias=True)
    await res.send(end.text)
    if res.reply is not None:
        res.reply.pending_approval = pending
