"""Tool calls waiting for a person's approval, stored so they outlive the process.

A row holds the paused turn (its messages as sent, the call waiting) and is decided
once: the decision is a conditional update, so two requests cannot both run the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Index, Text, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from liz.db.tables import Base
from liz.db.types import UTCDateTime

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
