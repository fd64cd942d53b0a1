"""Search on SQLite: vectors scanned with numpy from a per-scope cache, keywords with FTS5.

This Python cannot load SQLite extensions (so no ``sqlite-vec`` without swapping
the driver for everyone). An exact scan is also what keeps SQLite's answers equal
to PostgreSQL's: one scope's vectors are read once into a float32 matrix and a
search is one matrix-vector product (10k facts x 1536 dimensions is ~60 MB and a
few ms). The cache is dropped for a scope whenever its facts change.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from liz.facts.domain import Scope
from liz.facts.index.protocol import (
    TIE_MARGIN,
    Candidate,
    ChangeLog,
    IndexedFact,
    ModelPair,
    check_models,
    deterministic_top,
    model_bounds,
)
from liz.facts.vectors import Vector, from_stored, rounded


@dataclass(frozen=True)
class ScopeVectors:
    ids: list[str]
    hashes: list[str]
    rows: dict[str, int]
    matrix: Vector  # one unit vector per row
    bounds: tuple[ModelPair, ...]  # see index_base.model_bounds


class ScopeCache:
    """Per-scope vectors, dropped when the scope's facts change (in any process).

    Every change to a fact writes a ``FactHistory`` row, so the highest history id
    is a cheap, cross-process revision number; scopes with newer rows are stale.
    """

    def __init__(self, max_scopes: int) -> None:
        # Each value with the history mark it was loaded at.
        self._values: OrderedDict[Scope, tuple[ScopeVectors, int]] = OrderedDict()
        self._max_scopes = max_scopes
        self._history_mark: int | None = None
        self._own: set[int] = set()  # history rows of writes this process already took in

    async def refresh(self, session: AsyncSession) -> None:
        """Forget scopes changed since the last call by others (another process)."""
        mark = (await session.execute(text('SELECT max(id) FROM "FactHistory"'))).scalar()
        mark = int(mark or 0)
        if self._history_mark is None or mark < self._history_mark:
            self._values.clear()
        elif mark > self._history_mark:
            changed = await session.execute(
                text('SELECT id, "agentId", "userId" FROM "FactHistory" WHERE id > :mark'),
                {"mark": self._history_mark},
            )
            self.invalidate({(row[1], row[2]) for row in changed if row[0] not in self._own})
        self._own = {own for own in self._own if own > mark}
        self._history_mark = mark

    def get(self, scope: Scope) -> ScopeVectors | None:
        entry = self._values.get(scope)
        if entry is None:
            return None
        self._values.move_to_end(scope)
        return entry[0]

    def put(self, scope: Scope, value: ScopeVectors, mark: int | None = None) -> None:
        """Keep ``value``; ``mark`` is the history mark it reflects (default: the latest)."""
        self._values[scope] = (value, (self._history_mark or 0) if mark is None else mark)
        self._values.move_to_end(scope)
        while len(self._values) > self._max_scopes:
            self._values.popitem(last=False)

    def taken_in(self, scope: Scope, log: ChangeLog) -> tuple[ScopeVectors, int] | None:
        """Note the write as ours; return the scope's entry if it predates the write."""
        self._own.update(log.history_ids)
        entry = self._values.get(scope)
        if entry is None or (log.history_ids and entry[1] >= max(log.history_ids)):
            return None  # not cached, or loaded after the commit: it has the write already
        return entry

    def invalidate(self, scopes: Iterable[Scope]) -> None:
        for scope in scopes:
            self._values.pop(scope, None)


def search_rowid(fact_id: str) -> int:
    """The FTS5 rowid of a fact: 63 bits of its id's hash, so a change finds its row fast."""
    return int.from_bytes(hashlib.sha256(fact_id.encode()).digest()[:8], "big") >> 1


def scope_token(scope: Scope) -> str:
    """One word naming a scope in the FTS5 ``scope`` column; ids may hold any characters."""
    digest = hashlib.sha256(f"{scope[0]}\x00{scope[1]}".encode()).hexdigest()
    return f"s{digest[:32]}"


class SqliteFactIndex:
    """The :class:`~liz.facts.index.protocol.FactIndex` for SQLite."""

    def __init__(self, max_scopes: int = 64) -> None:
        self._cache = ScopeCache(max_scopes)

    async def _vectors(
        self, session: AsyncSession, scope: Scope, model: str, dimension: int
    ) -> ScopeVectors:
        await self._cache.refresh(session)
        bounds = await model_bounds(session, scope)
        await check_models(session, scope, bounds, model, dimension)
        cached = self._cache.get(scope)
        if cached is not None and cached.bounds == bounds:
            return cached
        result = await session.execute(
            text(
                'SELECT id, embedding, hash FROM "Fact" '
                'WHERE "agentId" = :agent AND "userId" = :user AND "retiredAt" IS NULL '
                "ORDER BY id"
            ),
            {"agent": scope[0], "user": scope[1]},
        )
        rows = result.all()
        ids = [row[0] for row in rows]
        if rows:
            matrix = np.stack([from_stored(row[1]) for row in rows])
        else:
            matrix = np.zeros((0, dimension), dtype=np.float32)
        hashes = [row[2] for row in rows]
        loaded = ScopeVectors(ids, hashes, {fid: i for i, fid in enumerate(ids)}, matrix, bounds)
        self._cache.put(scope, loaded)
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
        scores = np.round(vectors.matrix @ query, 6)
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

    async def keyword_candidates(
        self, session: AsyncSession, scope: Scope, terms: Sequence[str], *, limit: int
    ) -> dict[str, str]:
        if not terms:
            return {}
        words = " OR ".join(f'"{term}"' for term in terms)
        match = f'scope : "{scope_token(scope)}" AND text : ({words})'
        result = await session.execute(
            text(
                'SELECT "factId", text FROM "FactSearch" WHERE "FactSearch" MATCH :match '
                "ORDER BY rank LIMIT :limit"
            ),
            {"match": match, "limit": limit},
        )
        return {row[0]: row[1] for row in result}

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
            await session.execute(
                text(
                    'INSERT INTO "FactSearch" (rowid, "factId", scope, text) '
                    "VALUES (:rowid, :fact, :scope, :text)"
                ),
                rows,
            )

    async def facts_removed(self, session: AsyncSession, fact_ids: Iterable[str]) -> None:
        rowids = [search_rowid(fact_id) for fact_id in fact_ids]
        if rowids:
            await session.execute(
                text('DELETE FROM "FactSearch" WHERE rowid IN :rowids').bindparams(
                    bindparam("rowids", expanding=True)
                ),
                {"rowids": rowids},
            )

    def invalidate(self, scopes: Iterable[Scope]) -> None:
        self._cache.invalidate(scopes)

    def absorb(self, scope: Scope, log: ChangeLog) -> None:
        """Patch the scope's cached matrix with a write this process committed.

        Reloading a scope reads every vector (about 0.1 s per 10k facts); patching
        copies the matrix once, so writes do not make the next search slow.
        """
        entry = self._cache.taken_in(scope, log)
        if entry is None:
            return
        cached, mark = entry
        pairs = set(cached.bounds) | {(fact.model, fact.dimension) for fact in log.added}
        if len(pairs) > 1:
            self._cache.invalidate([scope])  # mixed models: let the next search reload
            return
        dropped = set(log.removed) | {fact.id for fact in log.added}
        keep = [row for row, fact_id in enumerate(cached.ids) if fact_id not in dropped]
        ids = [cached.ids[row] for row in keep] + [fact.id for fact in log.added]
        hashes = [cached.hashes[row] for row in keep] + [fact.hash for fact in log.added]
        matrix = np.concatenate(
            [cached.matrix[keep], *(fact.vector[np.newaxis, :] for fact in log.added)]
        )
        bounds = (pairs.pop(),) * 2 if pairs else ()
        rows = {fact_id: row for row, fact_id in enumerate(ids)}
        self._cache.put(scope, ScopeVectors(ids, hashes, rows, matrix, bounds), mark)
