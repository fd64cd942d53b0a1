"""Pending approvals: a paused turn written to the database, and resumed once decided.

``pending_approval`` stores the turn where the loop stopped; ``resume`` runs (or
refuses) the call a person decided on and lets the model write the reply, which is
kept in the conversation log as the turn's reply.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from liz.db.memories import store_memory
from liz.db.tool_approvals import (
    PENDING,
    StoredApproval,
    decide_approval,
    insert_approval,
    read_approval,
)
from liz.errors import Conflict, NotFound
from liz.llm.chat_answers import RequestedCall
from liz.types import InputObject, Memory

if TYPE_CHECKING:
    from liz.runtime import Runtime
    from liz.tools.loop import LoopEnd, ToolTurn


async def pending_approval(runtime: Runtime, input: InputObject, end: LoopEnd) -> dict[str, Any]:
    """Store the paused turn; the ``pendingApproval`` the reply carries."""
    if end.pending is None:
        raise ValueError("the loop ended without a pending call")
    call = end.pending.call
    now = runtime.clock.now()
    approval = StoredApproval(
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
        expires_at=now + timedelta(seconds=runtime.settings.liz_tool_approval_ttl),
    )
    async with runtime.sessions.begin() as session:
        await insert_approval(session, approval, now)
    return described(approval)


def described(approval: StoredApproval) -> dict[str, Any]:
    try:
        arguments: Any = json.loads(approval.arguments)
    except ValueError:
        arguments = approval.arguments
    return {
        "id": approval.id,
        "tool": approval.tool_name,
        "arguments": arguments,
        "text": approval.text,
        "expiresAt": approval.expires_at.isoformat(),
    }


@dataclass(frozen=True)
class Decision:
    """An approval someone may decide: checked to exist, be pending and unexpired."""

    approval: StoredApproval
    approve: bool


async def load_approval(runtime: Runtime, approval_id: str) -> StoredApproval:
    """The stored approval; NotFound when there is none."""
    async with runtime.reads() as session:
        approval = await read_approval(session, approval_id)
    if approval is None:
        raise NotFound(f"no pending approval {approval_id!r}; it may never have existed")
    return approval


def check_decidable(runtime: Runtime, approval: StoredApproval) -> None:
    """NotFound once expired, Conflict once decided."""
    if approval.expires_at <= runtime.clock.now():
        raise NotFound(f"approval {approval.id!r} has expired; ask the agent again")
    if approval.status != PENDING:
        raise Conflict(f"approval {approval.id!r} was already {approval.status}")


async def claim_decision(runtime: Runtime, decision: Decision) -> None:
    """Mark the approval decided, once: a second request for it gets a Conflict."""
    status = "approved" if decision.approve else "denied"
    async with runtime.sessions.begin() as session:
        won = await decide_approval(session, decision.approval.id, status, runtime.clock.now())
    if not won:
        raise Conflict(f"approval {decision.approval.id!r} was decided by another request")


async def resume(turn: ToolTurn, runtime: Runtime, decision: Decision) -> dict[str, Any]:
    """Run or refuse the call, let the model answer, keep the reply; the reply's body."""
    approval = decision.approval
    call = RequestedCall(approval.tool_call_id, approval.tool_name, approval.arguments)
    end = await turn.decided(json.loads(approval.messages), call, decision.approve)
    input = InputObject(
        user_id=approval.user_id, agent_id=approval.agent_id, room_id=approval.room_id
    )
    pending = None
    if end.pending is not None:
        pending = await pending_approval(runtime, input, end)
    content: dict[str, Any] = {"text": end.text, "toolCalls": [c.to_json_dict() for c in end.calls]}
    if pending is not None:
        content["pendingApproval"] = pending
    reply = Memory(
        user_id=approval.user_id,
        agent_id=approval.agent_id,
        room_id=approval.room_id,
        content=content,
        type="text",
        generator="llm",
        created_at=runtime.clock.now(),
    )
    await store_memory(runtime.engine, reply)
    body: dict[str, Any] = {
        "text": end.text,
        "route": None,
        "agentId": approval.agent_id,
        "userId": approval.user_id,
        "roomId": approval.room_id,
        "approval": {"id": approval.id, "approved": decision.approve},
    }
    if pending is not None:
        body["pendingApproval"] = pending
    return body
