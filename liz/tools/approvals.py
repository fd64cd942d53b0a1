"""Pending approvals: a paused turn written to the database, and resumed once decided.

``pending_approval`` stores the turn where the loop stopped. ``claim_decision`` takes
a person's decision on it, once; ``resume`` runs (or refuses) the call, keeps its
outcome, lets the model write the reply and keeps that in the conversation log as
the turn's reply. When the model fails after the call ran, the outcome stays kept:
the same decision sent again finishes the turn without running the call again.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from liz.db.tool_approvals import (
    PENDING,
    StoredApproval,
    decide_approval,
    insert_approval,
    read_approval,
    record_outcome,
    store_reply,
)
from liz.db.usage import usage_statements
from liz.errors import Conflict, LLMError, NotFound
from liz.llm.calls import RequestedCall
from liz.observe.usage import metering
from liz.tools.calls import CallOutcome
from liz.types import AgentReply, ApprovalDecided, InputObject, Memory, PendingApproval

if TYPE_CHECKING:
    from liz.runtime.services import Runtime
    from liz.tools.loop import LoopEnd, ToolTurn

APPROVED = "approved"
DENIED = "denied"


async def pending_approval(runtime: Runtime, input: InputObject, end: LoopEnd) -> PendingApproval:
    """Store the paused turn; the ``pendingApproval`` the reply carries."""
    approval = paused_turn(runtime, input, end)
    async with runtime.sessions.begin() as session:
        await insert_approval(session, approval, runtime.clock.now())
    return described(approval)


def paused_turn(runtime: Runtime, input: InputObject, end: LoopEnd) -> StoredApproval:
    """The approval a loop that stopped at a call needing one asks for (not stored yet)."""
    if end.pending is None:
        raise ValueError("the loop ended without a pending call")
    call = end.pending.call
    return StoredApproval(
        id=str(uuid.uuid4()),
        agent_id=input.agent_id,
        user_id=input.user_id,
        room_id=input.room,
        tool_call_id=call.id,
        tool_name=call.name,
        arguments=call.arguments,
        text=end.pending.text,
        messages=json.dumps(end.messages),
        status=PENDING,
        expires_at=runtime.clock.now() + timedelta(seconds=runtime.settings.liz_tool_approval_ttl),
    )


def described(approval: StoredApproval) -> PendingApproval:
    try:
        arguments: Any = json.loads(approval.arguments)
    except ValueError:
        arguments = approval.arguments
    return PendingApproval(
        id=approval.id,
        tool=approval.tool_name,
        arguments=arguments,
        text=approval.text,
        expires_at=approval.expires_at,
    )


@dataclass(frozen=True)
class Decision:
    """A decision this request carries out: just claimed, or taken up again after the
    model failed to answer it (then ``kept`` is the call's outcome, kept since)."""

    approval: StoredApproval
    approve: bool
    kept: CallOutcome | None = None


async def load_approval(runtime: Runtime, approval_id: str) -> StoredApproval:
    """The stored approval; NotFound when there is none."""
    async with runtime.reads() as session:
        approval = await read_approval(session, approval_id)
    if approval is None:
        raise NotFound(f"no pending approval {approval_id!r}; it may never have existed")
    return approval


async def claim_decision(runtime: Runtime, approval: StoredApproval, approve: bool) -> Decision:
    """Claim a pending approval for ``approve``, once; or take up the same decision again
    when its reply failed. NotFound once expired; Conflict otherwise."""
    if approval.status == PENDING:
        now = runtime.clock.now()
        if approval.expires_at <= now:
            raise NotFound(f"approval {approval.id!r} has expired; ask the agent again")
        async with runtime.sessions.begin() as session:
            status = APPROVED if approve else DENIED
            won = await decide_approval(session, approval.id, status, now)
        if not won:
            raise Conflict(f"approval {approval.id!r} was decided by another request")
        return Decision(approval, approve)
    if approval.reply_id is not None:
        raise Conflict(f"approval {approval.id!r} was already {approval.status}")
    if approval.outcome is None:
        raise Conflict(
            f"approval {approval.id!r} was {approval.status} and its call is still running, "
            "or was cut short; it is never run twice"
        )
    if approve != (approval.status == APPROVED):
        raise Conflict(
            f"approval {approval.id!r} was already {approval.status}; send "
            f'{{"approve": {json.dumps(not approve)}}} again to get the reply'
        )
    kept = CallOutcome.model_validate_json(approval.outcome)
    return Decision(approval, approve, kept)


async def resume(turn: ToolTurn, runtime: Runtime, decision: Decision) -> AgentReply:
    """Run or refuse the call, let the model answer, keep the reply; the reply."""
    approval = decision.approval
    outcome = decision.kept
    # The decided turn's tokens, kept with its reply.
    with metering(agent_id=approval.agent_id) as usage:
        if outcome is None:
            call = RequestedCall(approval.tool_call_id, approval.tool_name, approval.arguments)
            outcome = await turn.decide(call, decision.approve)
            async with runtime.sessions.begin() as session:
                await record_outcome(session, approval.id, outcome.model_dump_json(by_alias=True))
        try:
            end = await turn.go_on(json.loads(approval.messages), outcome)
        except LLMError as exc:
            raise _decision_kept(exc, decision) from exc
    input = InputObject(
        user_id=approval.user_id, agent_id=approval.agent_id, room_id=approval.room_id
    )
    paused = None if end.pending is None else paused_turn(runtime, input, end)
    pending = None if paused is None else described(paused)
    calls = [call.model_dump(mode="json", by_alias=True) for call in end.calls]
    content: dict[str, Any] = {"text": end.text, "toolCalls": calls}
    if pending is not None:
        content["pendingApproval"] = pending.model_dump(mode="json", by_alias=True)
    reply = Memory(
        user_id=approval.user_id,
        agent_id=approval.agent_id,
        room_id=approval.room_id,
        content=content,
        type="text",
        generator="llm",
        created_at=runtime.clock.now(),
    )
    async with runtime.sessions.begin() as session:
        if not await store_reply(session, approval.id, reply, paused):
            raise Conflict(f"approval {approval.id!r} was answered by another request")
        spent = usage_statements(
            usage.calls, agent_id=reply.agent_id, user_id=reply.user_id, at=reply.created_at
        )
        for statement in spent:
            await session.execute(statement.executable())
    return AgentReply(
        text=end.text,
        route=None,
        agent_id=approval.agent_id,
        user_id=approval.user_id,
        room_id=approval.room_id,
        pending_approval=pending,
        approval=ApprovalDecided(id=approval.id, approved=decision.approve),
    )


def _decision_kept(exc: LLMError, decision: Decision) -> LLMError:
    """``exc``, telling the caller that the decision stands and how to get the reply."""
    note = (
        f"; the decision on approval {decision.approval.id} is kept: send "
        f'{{"approve": {json.dumps(decision.approve)}}} again to get the reply'
    )
    return LLMError(
        exc.message + note,
        status=exc.status,
        retry_after=exc.retry_after,
        public=None if exc.public is None else exc.public + note,
        upstream_status=exc.upstream_status,
    )
