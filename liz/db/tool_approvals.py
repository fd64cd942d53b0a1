"""Tool calls waiting for a person's approval, stored so they outlive the process.

A row holds the paused turn (its messages as sent, the call waiting) and is decided
once: the decision is a conditional update, so two requests cannot both run the call.
The call's outcome is written as soon as it ran (or was refused), and the id of the
turn's reply in the reply's own transaction: a decision whose reply failed keeps its
outcome, and asking again finishes the turn without running the call again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Index, Text, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from liz.db.memories import insert_memory
from liz.db.tables import Base
from liz.db.types import UTCDateTime
from liz.types import Memory

PENDING = "pending"


class ToolApprovalRecord(Base):
    """One call a person must approve or deny before it runs."""

    __tablename__ = "ToolApproval"
    __table_args__ = (Index(None, "userId", "createdAt"),)

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    agent_id: Mapped[str] = mapped_column("agentId", Text)
    user_id: Mapped[str] = mapped_column("userId", Text)
    room_id: Mapped[str] = mapped_column("roomId", Text)
    tool_call_id: Mapped[str] = mapped_column("toolCallId", Text)
    tool_name: Mapped[str] = mapped_column("toolName", Text)
    arguments: Mapped[str] = mapped_column(Text)  # the JSON text the model wrote
    text: Mapped[str] = mapped_column(Text)  # the model's text before the call
    messages: Mapped[str] = mapped_column(Text)  # JSON: the turn's messages so far
    status: Mapped[str] = mapped_column(Text)  # pending, approved or denied
    created_at: Mapped[datetime] = mapped_column("createdAt", UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column("expiresAt", UTCDateTime())
    decided_at: Mapped[datetime | None] = mapped_column("decidedAt", UTCDateTime())
    outcome: Mapped[str | None] = mapped_column(Text)  # JSON: the decided call's outcome
    reply_id: Mapped[str | None] = mapped_column("replyId", Text)  # the turn's stored reply


@dataclass(frozen=True)
class StoredApproval:
    id: str
    agent_id: str
    user_id: str
    room_id: str
    tool_call_id: str
    tool_name: str
    arguments: str
    text: str
    messages: str
    status: str
    expires_at: datetime
    outcome: str | None = None
    reply_id: str | None = None


async def insert_approval(session: AsyncSession, approval: StoredApproval, now: datetime) -> None:
    session.add(
        ToolApprovalRecord(
            id=approval.id,
            agent_id=approval.agent_id,
            user_id=approval.user_id,
            room_id=approval.room_id,
            tool_call_id=approval.tool_call_id,
            tool_name=approval.tool_name,
            arguments=approval.arguments,
            text=approval.text,
            messages=approval.messages,
            status=approval.status,
            created_at=now,
            expires_at=approval.expires_at,
        )
    )


async def read_approval(session: AsyncSession, approval_id: str) -> StoredApproval | None:
    query = select(ToolApprovalRecord).where(ToolApprovalRecord.id == approval_id)
    row = await session.scalar(query)
    if row is None:
        return None
    return StoredApproval(
        row.id,
        row.agent_id,
        row.user_id,
        row.room_id,
        row.tool_call_id,
        row.tool_name,
        row.arguments,
        row.text,
        row.messages,
        row.status,
        row.expires_at,
        row.outcome,
        row.reply_id,
    )


async def decide_approval(
    session: AsyncSession, approval_id: str, status: str, now: datetime
) -> bool:
    """Mark a pending, unexpired approval decided; False when it no longer is pending."""
    result = await session.execute(
        update(ToolApprovalRecord)
        .where(
            ToolApprovalRecord.id == approval_id,
            ToolApprovalRecord.status == PENDING,
            ToolApprovalRecord.expires_at > now,
        )
        .values(status=status, decided_at=now)
    )
    return bool(getattr(result, "rowcount", 0) == 1)


async def record_outcome(session: AsyncSession, approval_id: str, outcome: str) -> None:
    """Keep the decided call's outcome (JSON), once it ran or was refused."""
    await session.execute(
        update(ToolApprovalRecord)
        .where(ToolApprovalRecord.id == approval_id, ToolApprovalRecord.outcome.is_(None))
        .values(outcome=outcome)
    )


async def store_reply(
    session: AsyncSession, approval_id: str, reply: Memory, paused: StoredApproval | None
) -> bool:
    """Store the decided turn's reply (and the call it leaves waiting, if any) and link the
    reply to the approval; False, storing nothing, when another request's reply was first."""
    result = await session.execute(
        update(ToolApprovalRecord)
        .where(ToolApprovalRecord.id == approval_id, ToolApprovalRecord.reply_id.is_(None))
        .values(reply_id=reply.id)
    )
    if getattr(result, "rowcount", 0) != 1:
        return False
    await insert_memory(session, reply)
    if paused is not None:
        await insert_approval(session, paused, reply.created_at)
    return True
