"""Search on SQLite: vectors scanned with numpy from a per-scope cache, keywords with FTS5.

This Python cannot load SQLite extensions (so no ``sqlite-vec`` without swapping
the driver for everyone). An exact scan is also what keeps SQLite's answers equal
to PostgreSQL's: one scope's vectors are read once into a float32 matrix and a
search is one matrix-vector product (10k facts x 1536 dimensions is ~60 MB and a
few ms); liz.facts.index.sqlite_cache keeps those matrices in step with writes.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence

import numpy as np
from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from liz.facts.domain import Scope
from liz.facts.index.protocol import (
    TIE_MARGIN,
    Candidate,
    ChangeLog,
    IndexedFact,
    check_models,
    deterministic_top,
    matches_per_term,
    model_bounds,
)
from liz.facts.index.sqlite_cache import ScopeCache, ScopeVectors
from liz.facts.vectors import Vector, from_stored, rounded, similarities_to

# Built once, not for every write or search.
_SCOPE_VECTORS = text(
    'SELECT id, embedding, hash FROM "Fact" '
    'WHERE "agentId" = :agent AND "userId" = :user AND "retiredAt" IS NULL ORDER BY id'
)
_INSERT_SEARCH = text(
    'INSERT INTO "FactSearch" (rowid, "factId", scope, text) VALUES (:rowid, :fact, :scope, :text)'
)
_DELETE_SEARCH = text('DELETE FROM "FactSearch" WHERE rowid IN :rowids').bindparams(
    bindparam("rowids", expanding=True)
)


_SQLITE_INSERT_SEARCH = (
    'INSERT INTO "FactSearch" (rowid, "factId", scope, text) VALUES (?, ?, ?, ?)'
)
_SQLITE_DELETE_SEARCH = 'DELETE FROM "FactSearch" WHERE rowid = ?'


def search_rowid(fact_id: str) -> int:
    """The FTS5 rowid of a fact: 63 bits of its id's hash, so a change finds its row fast."""
    return int.from_bytes(hashlib.sha256(fact_id.encode()).digest()[:8], "big") >> 1


def scope_token(scope: Scope) -> str:
    """One word naming a scope in the FTS5 ``scope`` column; ids may hold any characters."""
    digest = hashlib.sha256(f"{scope[0]}\x00{scope[1]}".encode()).hexdigest()
    return f"s{digest[:32]}"


def write_search_rows(
    db: sqlite3.Connection, added: Sequence[IndexedFact], removed: Sequence[str]
) -> None:
    """:meth:`SqliteFactIndex.facts_removed` then ``facts_added``, on a bare sqlite3
    connection in a write transaction (liz.facts.sqlite_commit)."""
    if removed:
        db.executemany(_SQLITE_DELETE_SEARCH, [(search_rowid(fact_id),) for fact_id in removed])
    if added:
        db.executemany(_SQLITE_INSERT_SEARCH, [_search_row(fact) for fact in added])


def _search_row(fact: IndexedFact) -> tuple[int, str, str, str]:
    return (
        search_rowid(fact.id),
        fact.id,
        scope_token((fact.agent_id, fact.user_id)),
        fact.text,
    )


class SqliteFactIndex:
    """The :class:`~liz.facts.index.protocol.FactIndex` for SQLite."""

    def __init__(self, max_scopes: int = 64) -> None:
        self._cache = ScopeCache(max_scopes)

    async def _vectors(
        self, session: AsyncSession, scope: Scope, model: str, dimension: int
    ) -> ScopeVectors:
        mark = await self._cache.refresh(session)
        bounds = await model_bounds(session, scope)
        await check_models(session, scope, bounds, model, dimension)
        cached = self._cache.get(scope)
        if cached is not None and cached.bounds == bounds:
            return cached
        result = await session.execute(_SCOPE_VECTORS, {"agent": scope[0], "user": scope[1]})
        rows = result.all()
        ids = [row[0] for row in rows]
        if rows:
            matrix = np.stack([from_stored(row[1]) for row in rows])
        else:
            matrix = np.zeros((0, dimension), dtype=np.float32)
        loaded = ScopeVectors(ids, [row[2] for row in rows], matrix, bounds)
        self._cache.put(scope, loaded, mark)
        return loaded

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
        vectors = await self._vectors(session, scope, model, query.size)
        if not vectors.ids:
            return []
        scores = np.round(similarities_to(vectors.matrix, query), 6)
        fetch = limit + TIE_MARGIN
        exhausted = len(scores) < fetch
        top = range(len(scores)) if exhausted else np.argpartition(-scores, fetch - 1)[:fetch]
        found = [(vectors.ids[i], float(scores[i]), vectors.hashes[i]) for i in top]
        chosen = deterministic_top(found, limit, exhausted)
        return [candidate for candidate in chosen if candidate[1] >= threshold]

    async def similarities(
        self, session: AsyncSession, scope: Scope, ids: Sequence[str], query: Vector, *, model: str
    ) -> dict[str, float]:
        vectors = await self._vectors(session, scope, model, query.size)
        return {
            fact_id: rounded(vectors.matrix[vectors.rows[fact_id]] @ query)
            for fact_id in ids
            if fact_id in vectors.rows
        }

    async def term_matches(
        self, session: AsyncSession, scope: Scope, terms: Sequence[str], *, cap: int
    ) -> dict[str, dict[str, str]]:
        # Unranked, so FTS5 stops after `cap + 1` matches; ranking (bm25) would visit every
        # match, and a word in every fact ("User's" holds "s") made that a scan of the scope.
        token = scope_token(scope)
        return await matches_per_term(
            session,
            terms,
            cap=cap,
            one_term='SELECT "factId", text FROM "FactSearch" WHERE "FactSearch" MATCH :term{n}',
            bind=lambda term: f'scope : "{token}" AND text : "{term}"',
        )

    async def prepare_dimension(self, dimension: int) -> None:
        return None

    async def facts_added(self, session: AsyncSession, facts: Iterable[IndexedFact]) -> None:
        rows = [
            {
                "rowid": search_rowid(fact.id),
                "fact": fact.id,
                "scope": scope_token((fact.agent_id, fact.user_id)),
                "text": fact.text,
            }
            for fact in facts
        ]
        if rows:
            await session.execute(_INSERT_SEARCH, rows)

    async def facts_removed(self, session: AsyncSession, fact_ids: Iterable[str]) -> None:
        rowids = [search_rowid(fact_id) for fact_id in fact_ids]
        if rowids:
            await session.execute(_DELETE_SEARCH, {"rowids": rowids})

    def invalidate(self, scopes: Iterable[Scope]) -> None:
        self._cache.invalidate(scopes)

    def absorb(self, scope: Scope, log: ChangeLog) -> None:
        """Patch the scope's cached vectors with a write this process committed.

        Reloading a scope reads every vector (about 0.1 s per 10k facts); patching
        costs the same at any size, so writes neither slow down as a scope grows
        nor make the next search slow.
        """
        self._cache.absorb(scope, log)
