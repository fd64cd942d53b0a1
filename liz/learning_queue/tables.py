"""The queue of learning jobs (``LearningJob`` in ``schema.prisma``).

A row is written in the same transaction as the message it learns from, and
deleted in the same transaction as the facts learned from it; what is left is
the backlog (``pending``) and the jobs no retry can fix (``failed``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, Text
from sqlalchemy.orm import Mapped, mapped_column

from liz.db.tables import Base
from liz.db.types import UTCDateTime

PENDING = "pending"
FAILED = "failed"


class LearningJobRecord(Base):
    """Learning facts from one message (a ``Memory`` row said by a user)."""

    __tablename__ = "LearningJob"
    __table_args__ = (
        # The head of each user's queue: the pending job with no earlier pending one.
        Index(None, "agentId", "userId", "status", "id"),
        Index(None, "status", "nextAttemptAt"),
    )

    # Increasing: a user's jobs are learned in this order.
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    memory_id: Mapped[str] = mapped_column("memoryId", Text, unique=True)
    agent_id: Mapped[str] = mapped_column("agentId", Text)
    user_id: Mapped[str] = mapped_column("userId", Text)
    agent_name: Mapped[str] = mapped_column("agentName", Text)
    reply_memory_id: Mapped[str | None] = mapped_column("replyMemoryId", Text)
    status: Mapped[str] = mapped_column(Text)  # "pending" or "failed"
    attempts: Mapped[int] = mapped_column(Integer)
    next_attempt_at: Mapped[datetime] = mapped_column("nextAttemptAt", UTCDateTime())
    claimed_by: Mapped[str | None] = mapped_column("claimedBy", Text)
    claimed_until: Mapped[datetime | None] = mapped_column("claimedUntil", UTCDateTime())
    last_error: Mapped[str | None] = mapped_column("lastError", Text)
    created_at: Mapped[datetime] = mapped_column("createdAt", UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column("updatedAt", UTCDateTime())
    # The queueing turn's place in its trace (W3C traceparent), when it was traced.
    traceparent: Mapped[str | None] = mapped_column(Text)
