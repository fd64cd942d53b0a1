"""Stored outcomes of requests sent with an ``Idempotency-Key``, per user.

A row is claimed (``status`` null) before the request runs and completed with its
status and JSON body after, so a retry with the same key gets that outcome instead
of running again. ``requestHash`` tells a retry from a different request that
reuses the key. While the request runs, its process renews ``createdAt`` (the claim's
last sign of life, :func:`renew_key`), so a claim not renewed for a lease was left by
a process that died.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Index, Integer, PrimaryKeyConstraint, Text, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from liz.db.tables import Base
from liz.db.types import UTCDateTime


class IdempotencyRecord(Base):
    """One ``Idempotency-Key`` a user sent, and the answer their first request got."""

    __tablename__ = "IdempotencyKey"
    __table_args__ = (PrimaryKeyConstraint("userId", "key"), Index(None, "createdAt"))

    user_id: Mapped[str] = mapped_column("userId", Text)
    key: Mapped[str] = mapped_column(Text)
    request_hash: Mapped[str] = mapped_column("requestHash", Text)
    # Null while the first request runs.
    status: Mapped[int | None] = mapped_column(Integer)
    response: Mapped[str | None] = mapped_column(Text)  # the JSON body answered
    created_at: Mapped[datetime] = mapped_column("createdAt", UTCDateTime())
    completed_at: Mapped[datetime | None] = mapped_column("completedAt", UTCDateTime())


@dataclass(frozen=True)
class StoredOutcome:
    request_hash: str
    status: int | None
    response: str | None
    created_at: datetime


async def claim_key(
    session: AsyncSession, user_id: str, key: str, request_hash: str, now: datetime
) -> StoredOutcome | None:
    """Claim ``key`` for a new request: None when claimed, else what is stored for it."""
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    values = {
        "user_id": user_id,
        "key": key,
        "request_hash": request_hash,
        "created_at": now,
    }
    claim = dialect.insert(IdempotencyRecord).values(**values).on_conflict_do_nothing()
    result = await session.execute(claim)
    if getattr(result, "rowcount", 0) == 1:
        return None
    row = await session.get(IdempotencyRecord, (user_id, key))
    if row is None:  # pruned between the two statements: claim it again
        return await claim_key(session, user_id, key, request_hash, now)
    return StoredOutcome(row.request_hash, row.status, row.response, row.created_at)


async def reclaim_key(
    session: AsyncSession,
    user_id: str,
    key: str,
    claimed_at: datetime,
    request_hash: str,
    now: datetime,
) -> bool:
    """Claim a key again: it expired, or its first request never finished (the process
    died). False when another request got there first."""
    result = await session.execute(
        update(IdempotencyRecord)
        .where(
            IdempotencyRecord.user_id == user_id,
            IdempotencyRecord.key == key,
            IdempotencyRecord.created_at == claimed_at,
        )
        .values(
            request_hash=request_hash,
            status=None,
            response=None,
            created_at=now,
            completed_at=None,
        )
    )
    return getattr(result, "rowcount", 0) == 1


async def renew_key(
    session: AsyncSession, user_id: str, key: str, request_hash: str, now: datetime
) -> bool:
    """Say the request holding ``key`` still runs; False when its claim is gone (answered,
    released, or taken over by a retry with another body)."""
    result = await session.execute(
        update(IdempotencyRecord)
        .where(
            IdempotencyRecord.user_id == user_id,
            IdempotencyRecord.key == key,
            IdempotencyRecord.request_hash == request_hash,
            IdempotencyRecord.status.is_(None),
        )
        .values(created_at=now)
    )
    return getattr(result, "rowcount", 0) == 1


async def complete_key(
    session: AsyncSession, user_id: str, key: str, status: int, response: str, now: datetime
) -> None:
    await session.execute(
        update(IdempotencyRecord)
        .where(IdempotencyRecord.user_id == user_id, IdempotencyRecord.key == key)
        .values(status=status, response=response, completed_at=now)
    )


async def release_key(session: AsyncSession, user_id: str, key: str) -> None:
    """Forget a claim whose request ended without an answer to keep."""
    await session.execute(
        delete(IdempotencyRecord).where(
            IdempotencyRecord.user_id == user_id,
            IdempotencyRecord.key == key,
            IdempotencyRecord.status.is_(None),
        )
    )


async def prune_keys(session: AsyncSession, older_than: timedelta, now: datetime) -> None:
    """Drop every key older than ``older_than`` (housekeeping; expired keys replay nothing)."""
    await session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at < now - older_than)
    )


async def stored_outcome(session: AsyncSession, user_id: str, key: str) -> StoredOutcome | None:
    row = (
        await session.execute(
            select(IdempotencyRecord).where(
                IdempotencyRecord.user_id == user_id, IdempotencyRecord.key == key
            )
        )
    ).scalar_one_or_none()
    if row is None:
        return None
    return StoredOutcome(row.request_hash, row.status, row.response, row.created_at)
