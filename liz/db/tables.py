"""SQLAlchemy models for Liz's core tables, mirroring `schema.prisma`.

Table and column names are Prisma's (``Memory``, ``userId``); Python attributes are
snake_case. String columns are ``TEXT`` and index/key names follow Prisma's own
conventions (``Memory_roomId_idx``, ``Memory_pkey``), so a database that Liz created
with Prisma has exactly the schema these models describe.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import Index, MetaData, Text, func
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from liz.db.types import UTCDateTime

# Prisma's names for keys and indexes; "%(column_0_N_name)s" joins columns with "_".
NAMING_CONVENTION = {
    "ix": "%(table_name)s_%(column_0_N_name)s_idx",
    "uq": "%(table_name)s_%(column_0_N_name)s_key",
    "fk": "%(table_name)s_%(column_0_N_name)s_fkey",
    "pk": "%(table_name)s_pkey",
    "ck": "%(table_name)s_%(constraint_name)s_check",
}


class Base(DeclarativeBase):
    """Base of every liz model; its metadata carries Prisma's naming convention."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _new_id() -> str:
    return str(uuid.uuid4())


def _utc_now() -> datetime:
    return datetime.now(UTC)


class MemoryRecord(Base):
    """One message in a room, said by a user or by the agent (Liz's ``Memory``)."""

    __tablename__ = "Memory"
    __table_args__ = (
        Index(None, "roomId"),
        # The recent conversation, newest first (liz.db.memories.recent_memories).
        Index(None, "userId", "agentId", "createdAt"),
        Index(None, "type"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True, default=_new_id)
    user_id: Mapped[str] = mapped_column("userId", Text)
    agent_id: Mapped[str] = mapped_column("agentId", Text)
    room_id: Mapped[str] = mapped_column("roomId", Text)
    # JSON text, as in Liz; read through liz.db.memories, which tolerates bad rows.
    content: Mapped[str] = mapped_column(Text)
    type: Mapped[str] = mapped_column(Text)
    generator: Mapped[str] = mapped_column(Text)  # "llm" or "external"
    created_at: Mapped[datetime] = mapped_column(
        "createdAt", UTCDateTime(), default=_utc_now, server_default=func.current_timestamp()
    )


class TweetRecord(Base):
    """A tweet the agent has seen or posted (Liz's ``Tweet``)."""

    __tablename__ = "Tweet"
    __table_args__ = (
        Index(None, "userId"),
        Index(None, "conversationId"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    user_id: Mapped[str] = mapped_column("userId", Text)
    username: Mapped[str] = mapped_column(Text)
    conversation_id: Mapped[str | None] = mapped_column("conversationId", Text)
    in_reply_to_id: Mapped[str | None] = mapped_column("inReplyToId", Text)
    created_at: Mapped[datetime] = mapped_column(
        "createdAt", UTCDateTime(), default=_utc_now, server_default=func.current_timestamp()
    )
    permanent_url: Mapped[str | None] = mapped_column("permanentUrl", Text)
