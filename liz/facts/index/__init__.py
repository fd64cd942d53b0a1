"""Vector and keyword search over facts: one :class:`FactIndex` per database kind.

``sqlite`` scans a cached numpy matrix and queries FTS5; ``postgres`` asks pgvector
(HNSW) and full-text search. Both return the same results for the same data.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from liz.facts.index.postgres import PostgresFactIndex
from liz.facts.index.protocol import FactIndex
from liz.facts.index.sqlite import SqliteFactIndex

__all__ = ["FactIndex", "open_index"]


def open_index(engine: AsyncEngine, *, cache_scopes: int) -> FactIndex:
    """The index for ``engine``'s database; SQLite keeps ``cache_scopes`` scopes in memory."""
    if engine.dialect.name == "postgresql":
        return PostgresFactIndex(engine)
    return SqliteFactIndex(cache_scopes)
