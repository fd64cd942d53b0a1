"""Taking over a database that Liz (TypeScript, Prisma) created.

Such a database has the ``Memory`` and ``Tweet`` tables (and Prisma's
``_prisma_migrations``) but no ``alembic_version``. The core migration would try
to create those tables again, so instead we check that they hold the columns we
need, add what is missing, and record them as already at revision ``0001_core``.
Rows keep their meaning (see the two rewrites below); later migrations then run as usual.
"""

from __future__ import annotations

import logging

from sqlalchemy import Table, inspect, text
from sqlalchemy.engine import Connection

from liz.db.tables import MemoryRecord, TweetRecord
from liz.db.vector_support import enable_pgvector
from liz.errors import StorageError

logger = logging.getLogger(__name__)

CORE_REVISION = "0001_core"
_CORE_TABLES: tuple[Table, ...] = (MemoryRecord.__table__, TweetRecord.__table__)  # type: ignore[assignment]


def needs_adoption(connection: Connection) -> bool:
    """Whether this database has Liz's tables but was never migrated by liz."""
    names = set(inspect(connection).get_table_names())
    return "alembic_version" not in names and any(t.name in names for t in _CORE_TABLES)


def adopt_prisma_tables(connection: Connection) -> None:
    """Bring Liz's existing tables up to liz's ``0001_core`` schema, in place.

    Raises :class:`StorageError` (and changes nothing) when a table lacks a column
    liz needs: that database was not made by Liz's schema.
    """
    inspector = inspect(connection)
    existing = set(inspector.get_table_names())
    for table in _CORE_TABLES:
        if table.name not in existing:
            continue
        have = {column["name"] for column in inspector.get_columns(table.name)}
        missing = [column.name for column in table.columns if column.name not in have]
        if missing:
            raise StorageError(
                f"table {table.name!r} exists but lacks column(s) {missing}, so it was not "
                "created by Liz's schema.prisma; point DATABASE_URL at a new database "
                "or rename that table"
            )
    for table in _CORE_TABLES:
        if table.name not in existing:
            table.create(connection)
            continue
        index_names = {index["name"] for index in inspector.get_indexes(table.name)}
        for index in table.indexes:
            if index.name not in index_names:
                index.create(connection)
        if connection.dialect.name == "postgresql":
            _make_created_at_aware(connection, table.name)
        else:
            _store_text_times_as_milliseconds(connection, table.name)
    enable_pgvector(connection)
    logger.info("adopted Liz's existing tables %s", sorted(existing & {"Memory", "Tweet"}))


def _store_text_times_as_milliseconds(connection: Connection, table: str) -> None:
    # Prisma writes epoch milliseconds, but a row inserted by hand takes the column
    # default, SQLite's text "YYYY-MM-DD HH:MM:SS". SQLite sorts every number before
    # every text, so mixed rows would come back out of order: rewrite the text ones
    # as the same instant in milliseconds (Liz reads both forms).
    connection.execute(
        text(
            f'UPDATE "{table}" SET "createdAt" = '
            'CAST(ROUND((julianday("createdAt") - 2440587.5) * 86400000) AS INTEGER) '
            'WHERE typeof("createdAt") = \'text\' AND julianday("createdAt") IS NOT NULL'
        )
    )


def _make_created_at_aware(connection: Connection, table: str) -> None:
    # Prisma declares DateTime as "timestamp(3)" holding UTC; liz reads aware times.
    # Prisma reads timestamptz just as well, so Liz keeps working on the same rows.
    column = next(c for c in inspect(connection).get_columns(table) if c["name"] == "createdAt")
    if getattr(column["type"], "timezone", False):
        return
    connection.execute(
        text(
            f'ALTER TABLE "{table}" ALTER COLUMN "createdAt" TYPE timestamptz '
            "USING \"createdAt\" AT TIME ZONE 'UTC'"
        )
    )
