"""Can the database do its job right now: answer, and take a write?

A database can answer reads and still refuse every write (a read-only file or
mount, a PostgreSQL standby or read-only transaction, a full disk), which would
lose every message while ``SELECT 1`` looks fine. So the probe writes a row into
``Memory`` and rolls it back, and on SQLite also looks at the free disk space.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from pathlib import Path

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.db.errors import storage_error_for
from liz.db.tables import MemoryRecord
from liz.types import Clock

logger = logging.getLogger(__name__)

# Below this much free space a SQLite database is reported as unable to write: its
# write-ahead log and any new page need room on the disk.
MIN_FREE_BYTES = 1 << 20


async def database_problem(
    sessions: async_sessionmaker[AsyncSession], engine: AsyncEngine, clock: Clock
) -> str | None:
    """None when the database answers and can write; otherwise what is wrong, briefly."""
    try:
        async with sessions() as session:
            transaction = await session.begin()
            try:
                await session.execute(
                    insert(MemoryRecord).values(
                        id=f"liz-health-probe-{uuid.uuid4()}",
                        user_id="liz-health-probe",
                        agent_id="liz-health-probe",
                        room_id="liz-health-probe",
                        content="{}",
                        type="health-probe",
                        generator="external",
                        created_at=clock.now(),
                    )
                )
            finally:
                await transaction.rollback()
    except Exception as exc:  # the probe reports, it never fails itself
        logger.warning("health check: the database failed a write: %r", exc)
        storage = storage_error_for(exc)
        if storage is not None and "cannot store" in storage.message:
            return "cannot write (read-only or disk full)"
        if storage is not None:
            return f"unreachable: {type(exc).__name__}"
        return f"cannot write: {type(exc).__name__}"
    return _sqlite_disk_problem(engine)


def _sqlite_disk_problem(engine: AsyncEngine) -> str | None:
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return None
    try:
        free = shutil.disk_usage(Path(database).resolve().parent).free
    except OSError:
        return None
    if free < MIN_FREE_BYTES:
        return f"cannot write: the disk holding the database has {free} bytes free"
    return None
