"""What a write reads before it writes: the facts its plan touches, under the scope's lock.

The statements are built once, at import, not for every write.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, bindparam, select, text
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncSession

from liz.db.types import UTCDateTime
from liz.facts.domain import Scope
from liz.facts.tables import FactRecord


@dataclass(frozen=True)
class Stored:
    """What a write needs to know of a stored fact."""

    id: str
    text: str
    hash: str
    subject: str
    retired: bool
    updated_at: datetime | None


@dataclass
class Snapshot:
    """The scope's facts a write touches, as read under the write lock."""

    targets: dict[str, Stored]  # by id, active or retired
    by_hash: dict[str, Stored]  # active facts by the hash of their text


_COLUMNS = (
    FactRecord.id,
    FactRecord.agent_id,
    FactRecord.user_id,
    FactRecord.text,
    FactRecord.hash,
    FactRecord.subject,
    FactRecord.retired_at,
    FactRecord.updated_at,
)
# By primary key only, the scope checked on the rows (see queries.records_by_id).
_BY_ID = select(*_COLUMNS).where(FactRecord.id.in_(bindparam("ids", expanding=True)))
_BY_ID_LOCKED = _BY_ID.with_for_update()
_BY_HASH = (
    select(*_COLUMNS)
    .where(
        FactRecord.agent_id == bindparam("agent"),
        FactRecord.user_id == bindparam("user"),
        FactRecord.hash.in_(bindparam("hashes", expanding=True)),
        FactRecord.retired_at.is_(None),
    )
    .order_by(FactRecord.created_at, FactRecord.id)
)
_ADVISORY_LOCK = text("SELECT pg_advisory_xact_lock(:key)")


async def read_snapshot(
    session: AsyncSession, scope: Scope, dialect: str, ids: Iterable[str], hashes: Iterable[str]
) -> Snapshot:
    """Lock the scope for this transaction and read the facts with these ids or hashes."""
    await lock_scope(session, scope, dialect)
    targets: dict[str, Stored] = {}
    if wanted := sorted(set(ids)):
        for row in await session.execute(_BY_ID_LOCKED, {"ids": wanted}):
            if (row.agent_id, row.user_id) == scope:
                targets[row.id] = _stored(row)
    by_hash: dict[str, Stored] = {}
    if digests := sorted(set(hashes)):
        found = await session.execute(
            _BY_HASH, {"agent": scope[0], "user": scope[1], "hashes": digests}
        )
        for row in found:
            by_hash.setdefault(row.hash, _stored(row))
    return Snapshot(targets, by_hash)


# The same reads as _BY_ID and _BY_HASH, on the bare sqlite3 connection
# (liz.facts.sqlite_commit); a JSON array binds any number of ids or hashes.
_SQLITE_COLUMNS = 'id, "agentId", "userId", text, hash, subject, "retiredAt", "updatedAt"'
_SQLITE_BY_ID = f'SELECT {_SQLITE_COLUMNS} FROM "Fact" WHERE id IN (SELECT value FROM json_each(?))'
_SQLITE_BY_HASH = (
    f'SELECT {_SQLITE_COLUMNS} FROM "Fact" WHERE "agentId" = ? AND "userId" = ? '
    'AND hash IN (SELECT value FROM json_each(?)) AND "retiredAt" IS NULL '
    'ORDER BY "createdAt", id'
)
_TIMES = UTCDateTime()


def read_snapshot_on_sqlite(
    db: sqlite3.Connection, dialect: Dialect, scope: Scope, ids: list[str], hashes: list[str]
) -> Snapshot:
    """:func:`read_snapshot` on a SQLite connection whose transaction holds the write lock."""
    targets: dict[str, Stored] = {}
    if ids:
        for row in db.execute(_SQLITE_BY_ID, (json.dumps(ids),)):
            if (row[1], row[2]) == scope:
                targets[row[0]] = _stored_on_sqlite(row, dialect)
    by_hash: dict[str, Stored] = {}
    if hashes:
        for row in db.execute(_SQLITE_BY_HASH, (scope[0], scope[1], json.dumps(hashes))):
            by_hash.setdefault(row[4], _stored_on_sqlite(row, dialect))
    return Snapshot(targets, by_hash)


def _stored_on_sqlite(row: tuple[Any, ...], dialect: Dialect) -> Stored:
    updated_at = _TIMES.process_result_value(row[7], dialect)
    return Stored(row[0], row[3], row[4], row[5], row[6] is not None, updated_at)


def _stored(row: Row[str, str, str, str, str, str, datetime | None, datetime]) -> Stored:
    return Stored(
        row.id, row.text, row.hash, row.subject, row.retired_at is not None, row.updated_at
    )


async def lock_scope(session: AsyncSession, scope: Scope, dialect: str) -> None:
    """Serialize writers of one scope across processes (SQLite serializes all writers)."""
    if dialect == "postgresql":
        await session.execute(_ADVISORY_LOCK, {"key": scope_lock_key(scope)})


def scope_lock_key(scope: Scope) -> int:
    """The key of the scope's PostgreSQL advisory lock, the same in every process."""
    digest = hashlib.sha256(f"liz-facts\x00{scope[0]}\x00{scope[1]}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)
