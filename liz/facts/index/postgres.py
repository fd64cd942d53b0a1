"""Search on PostgreSQL: pgvector (HNSW, cosine) and full-text search (GIN, ``simple``).

Embedding dimensions differ by model, so ``Fact.embedding`` is a ``vector`` of
any dimension, and HNSW (which needs one) gets a partial expression index per
dimension in use: ``(embedding::vector(N)) vector_cosine_ops WHERE
"embeddingDim" = N``, made the first time a dimension is written or searched.
Switching models then needs no migration and keeps the old index until dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from liz.errors import UsageError
from liz.facts.domain import Scope
from liz.facts.index.protocol import (
    TIE_MARGIN,
    Candidate,
    ChangeLog,
    IndexedFact,
    check_models,
    deterministic_top,
    model_bounds,
)
from liz.facts.vectors import Vector, rounded

logger = logging.getLogger(__name__)

# Candidates HNSW visits per search; above the default (40) for recall close to exact.
EF_SEARCH = 200
MAX_DIMENSION = 2000  # pgvector's HNSW limit for `vector`


def _vector_literal(query: Vector) -> str:
    return "[" + ",".join(f"{value:.8g}" for value in query.tolist()) + "]"


def _distance(dimension: int) -> str:
    # The same expression as the partial index, so the planner can use it.
    return f"(embedding::vector({dimension})) <=> CAST(:query AS vector({dimension}))"


class PostgresFactIndex:
    """The :class:`~liz.facts.index.protocol.FactIndex` for PostgreSQL with pgvector."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._prepared: set[int] = set()

    async def _check(self, session: AsyncSession, scope: Scope, model: str, dimension: int) -> None:
        bounds = await model_bounds(session, scope)
        await check_models(session, scope, bounds, model, dimension)

    async def prepare_dimension(self, dimension: int) -> None:
        """Create the HNSW index for ``dimension`` if it is missing (once per process)."""
        if dimension in self._prepared:
            return
        if not 1 <= dimension <= MAX_DIMENSION:
            raise UsageError(
                f"embeddings of dimension {dimension} cannot be indexed by pgvector's HNSW "
                f"(at most {MAX_DIMENSION}); choose an embedding model with fewer dimensions"
            )
        statement = (
            f'CREATE INDEX IF NOT EXISTS "Fact_embedding_hnsw_{dimension}" ON "Fact" '
            f"USING hnsw ((embedding::vector({dimension})) vector_cosine_ops) "
            f'WHERE "embeddingDim" = {dimension}'
        )
        try:
            async with self._engine.begin() as connection:
                await connection.execute(text(statement))
        except DBAPIError as exc:
            # Another process creating the same index at the same moment: it exists now.
            logger.info("HNSW index for dimension %d not created here: %s", dimension, exc)
        self._prepared.add(dimension)

    async def _tune(self, session: AsyncSession) -> None:
        await session.execute(
            text(
                "SELECT set_config('hnsw.ef_search', :ef, true), "
                "set_config('hnsw.iterative_scan', 'strict_order', true)"
            ),
            {"ef": str(EF_SEARCH)},
        )

    async def vector_candidates(
        self,
        session: AsyncSession,
        scope: Scope,
        query: Vector,
        *,
        model: str,
        limit: int,
        threshold: float,
    ) -> list[Candidate]:
        dimension = query.size
        await self._check(session, scope, model, dimension)
        await self._tune(session)
        where = (
            'WHERE "agentId" = :agent AND "userId" = :user AND "retiredAt" IS NULL '
            f'AND "embeddingDim" = {dimension} '
        )
        values = {"query": _vector_literal(query), "agent": scope[0], "user": scope[1]}
        result = await session.execute(
            text(
                f'SELECT id, 1 - ({_distance(dimension)}), hash FROM "Fact" {where}'
                f"ORDER BY {_distance(dimension)} LIMIT :limit"
            ),
            {**values, "limit": limit + TIE_MARGIN},
        )
        found = [(row[0], rounded(row[1]), row[2]) for row in result]
        chosen = deterministic_top(found, limit, exhausted=len(found) < limit + TIE_MARGIN)
        return [candidate for candidate in chosen if candidate[1] >= threshold]

    async def similarities(
        self, session: AsyncSession, scope: Scope, ids: Sequence[str], query: Vector, *, model: str
    ) -> dict[str, float]:
        if not ids:
            return {}
        dimension = query.size
        await self._check(session, scope, model, dimension)
        # By primary key only (the planner would walk the scope index); scope checked on rows.
        result = await session.execute(
            text(
                f'SELECT id, 1 - ({_distance(dimension)}), "agentId", "userId" FROM "Fact" '
                f'WHERE id IN :ids AND "embeddingDim" = {dimension}'
            ).bindparams(bindparam("ids", expanding=True)),
            {"query": _vector_literal(query), "ids": list(ids)},
        )
        return {row[0]: rounded(row[1]) for row in result if (row[2], row[3]) == scope}

    async def keyword_candidates(
        self, session: AsyncSession, scope: Scope, terms: Sequence[str], *, limit: int
    ) -> dict[str, str]:
        if not terms:
            return {}
        # Terms are letters and digits only (liz.facts.normalize), safe to quote.
        query = " | ".join(f"'{term}'" for term in terms)
        result = await session.execute(
            text(
                "SELECT id, text FROM \"Fact\", to_tsquery('simple', :query) AS q "
                'WHERE "agentId" = :agent AND "userId" = :user AND "retiredAt" IS NULL '
                'AND "searchVector" @@ q '
                'ORDER BY ts_rank("searchVector", q) DESC, hash LIMIT :limit'
            ),
            {"query": query, "agent": scope[0], "user": scope[1], "limit": limit},
        )
        return {row[0]: row[1] for row in result}

    async def facts_added(self, session: AsyncSession, facts: Iterable[IndexedFact]) -> None:
        return None  # the GIN and HNSW indexes follow the table by themselves

    async def facts_removed(self, session: AsyncSession, fact_ids: Iterable[str]) -> None:
        return None

    def invalidate(self, scopes: Iterable[Scope]) -> None:
        return None  # nothing cached: every search reads the database

    def absorb(self, scope: Scope, log: ChangeLog) -> None:
        return None
