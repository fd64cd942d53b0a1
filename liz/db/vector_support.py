"""pgvector on PostgreSQL: enabling it when the server has it, and saying how to get it."""

from __future__ import annotations

import logging

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.errors import StorageError

logger = logging.getLogger(__name__)

PGVECTOR_FIX = (
    "install pgvector on the server (apt install postgresql-15-pgvector) and run "
    "`liz db upgrade`, or use SQLite, or turn the facts store off with "
    "LIZ_FACTS_ENABLED=false"
)


def enable_pgvector(connection: Connection) -> bool:
    """Create the ``vector`` extension if the server offers it; say whether it is on.

    Never fails: a server without pgvector (or a role not allowed to create
    extensions) leaves the extension off, and :func:`require_pgvector` explains
    the fix when a feature that needs vectors is used.
    """
    if connection.dialect.name != "postgresql":
        return False
    offered = connection.execute(
        text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    ).scalar()
    if not offered:
        logger.warning("PostgreSQL has no pgvector; vector search needs it: %s", PGVECTOR_FIX)
        return False
    try:
        # A savepoint, so a refusal does not abort the migration's transaction.
        with connection.begin_nested():
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
    except DBAPIError as exc:
        logger.warning("could not enable pgvector (%s); %s", exc.orig, PGVECTOR_FIX)
        return False
    return True


def pgvector_enabled(connection: Connection) -> bool:
    """Whether the ``vector`` extension is installed in this database."""
    if connection.dialect.name != "postgresql":
        return False
    found = connection.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'vector'"))
    return found.scalar() is not None


async def require_pgvector(engine: AsyncEngine) -> None:
    """Raise :class:`StorageError` if `engine` is PostgreSQL without pgvector.

    Call it when a feature that stores or searches vectors starts. SQLite needs
    nothing and passes.
    """
    if engine.dialect.name != "postgresql":
        return
    try:
        async with engine.connect() as connection:
            enabled = await connection.run_sync(pgvector_enabled)
    except (DBAPIError, OSError) as exc:
        raise StorageError(f"could not check PostgreSQL for pgvector: {exc}") from exc
    if not enabled:
        raise StorageError(
            "this feature stores vectors, and this PostgreSQL database has no pgvector "
            f"extension: {PGVECTOR_FIX}"
        )
