"""Column types that read what Prisma wrote and write what Prisma reads."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine


class _SqliteDateTimeColumn(sqlite.DATETIME):
    """SQLite's DATETIME column with no value processing: :class:`UTCDateTime` does it."""

    def bind_processor(self, dialect: Dialect) -> None:
        return None

    def result_processor(self, dialect: Dialect, coltype: object) -> None:
        return None


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime, stored the way Liz (Prisma) stores it.

    PostgreSQL gets ``timestamptz``. On SQLite, Prisma keeps a ``DateTime`` as an
    integer count of milliseconds since the Unix epoch in a ``DATETIME`` column, so
    we write that too (Liz can read our rows) and read it back, along with the text
    forms a SQLite default (``CURRENT_TIMESTAMP``) or a hand-written row may hold.
    Naive values are taken as UTC; every value read is aware and in UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(_SqliteDateTimeColumn())  # type: ignore[no-untyped-call]
        return dialect.type_descriptor(DateTime(timezone=True))

    # The one place liz converts a datetime for the database and back: a session and
    # the driver (liz.db.driver) both convert through the column's type.
    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        utc = _as_utc(value)
        # What Prisma stores on SQLite: milliseconds (finer would not survive Liz).
        return int(utc.timestamp() * 1000) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        """A stored date and time (epoch ms, a text form, a datetime) as aware UTC."""
        if value is None:
            return None
        if isinstance(value, datetime):
            return value if value.tzinfo is UTC else _as_utc(value)  # PostgreSQL's: UTC already
        if isinstance(value, int | float):
            return datetime.fromtimestamp(value / 1000, UTC)
        return _as_utc(_parse_text_datetime(str(value)))


def _as_utc(value: datetime) -> datetime:
    """``value`` in UTC; a naive value is taken as UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _parse_text_datetime(text: str) -> datetime:
    """Read ``2024-01-02 03:04:05``, ISO 8601 with ``T``/``Z``/offset, or epoch ms as text."""
    stripped = text.strip()
    if stripped.lstrip("-").isdigit():
        return datetime.fromtimestamp(int(stripped) / 1000, UTC)
    if stripped.endswith("Z"):
        stripped = stripped[:-1] + "+00:00"
    # SQLite's own form puts a space before the offset: "2024-01-02 03:04:05 +00:00".
    stripped = re.sub(r"\s+([+-]\d\d:?\d\d)$", r"\1", stripped)
    return datetime.fromisoformat(stripped)
