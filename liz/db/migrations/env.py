"""Alembic environment for liz.

`liz.db.migrate` runs Alembic with an open connection in ``config.attributes
["connection"]``; run by hand (``alembic -c liz/db/alembic.ini upgrade head``) it
opens its own async engine from ``DATABASE_URL``.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from alembic import context
from sqlalchemy.engine import Connection

from liz.config import Settings
from liz.db.all_tables import Base
from liz.db.engine import create_engine
from liz.errors import UsageError
from liz.facts.tables import SEARCH_STRUCTURE_PREFIXES

# Teaches SQLAlchemy's reflection the `vector` type, so `alembic check` knows it;
# pgvector is the optional "postgres" extra.
with contextlib.suppress(ImportError):
    import pgvector.sqlalchemy  # noqa: F401

# Tables that live in a liz database but are not liz's to manage.
FOREIGN_TABLES = frozenset({"_prisma_migrations"})


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    # The facts memory's FTS5 table and per-dimension HNSW indexes are made outside the models.
    if name is not None and name.startswith(SEARCH_STRUCTURE_PREFIXES):
        return False
    return not (type_ == "table" and name in FOREIGN_TABLES)


def run_migrations(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        # SQLite cannot ALTER most things; batch mode copies the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        include_name=include_name,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def run_with_own_engine(url: str) -> None:
    engine = create_engine(url, pooled=False)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(run_migrations)
    finally:
        await engine.dispose()


def main() -> None:
    if context.is_offline_mode():
        raise UsageError("liz's migrations run against a database; drop --sql")
    shared: Connection | None = context.config.attributes.get("connection")
    if shared is not None:
        run_migrations(shared)
        return
    url = context.config.get_main_option("sqlalchemy.url") or Settings().database_url
    asyncio.run(run_with_own_engine(url))


main()
