"""Facts on SQLite: vectors scanned with numpy from a per-scope cache, keywords with FTS5.

This Python cannot load SQLite extensions, and an exact scan is also what keeps
SQLite's answers equal to PostgreSQL's: a scope's vectors are read once into a
matrix (liz.facts.sqlite.cache keeps it in step with writes) and a search is one
matrix-vector product. The FTS5 table ``FactSearch`` holds the active facts' text,
written in the facts' own transaction.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence

import numpy as np
from sqlalchemy import TextClause, bindparam, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.facts.domain import Candidate, ChangeLog, ModelPair, Scope
from liz.facts.queries import FACT, check_models, scope_values
from liz.facts.search import TIE_MARGIN, deterministic_top
from liz.facts.sqlite.cache import ScopeCache, read_history
from liz.facts.sqlite.vectors import ScopeVectors
from liz.facts.storage import Nearest, SessionStorage, term_hits
from liz.facts.vectors import Vector, rounded, similarities_to
from liz.facts.writes import Rows

_SCOPE_VECTORS = (
    select(FACT.id, FACT.embedding, FACT.hash)
    .where(FACT.agentId == bindparam("agent"), FACT.userId == bindparam("user"))
    .where(FACT.retiredAt.is_(None))
    .order_by(FACT.id)
)
_EPOCH = "liz.facts.sqlite.epoch"
_INSERT_SEARCH = text(
    'INSERT INTO "FactSearch" (rowid, "factId", scope, text) VALUES (:rowid, :fact, :scope, :text)'
)
_DELETE_SEARCH = text('DELETE FROM "FactSearch" WHERE rowid IN :rowids').bindparams(
    bindparam("rowids", expanding=True)
)


def search_rowid(fact_id: str) -> int:
    """The FTS5 rowid of a fact: 63 bits of its id's hash, so a change finds its row fast."""
    return int.from_bytes(hashlib.sha256(fact_id.encode()).digest()[:8], "big") >> 1


def scope_token(scope: Scope) -> str:
    """One word naming a scope in the FTS5 ``scope`` column; ids may hold any characters."""
    digest = hashlib.sha256(f"{scope[0]}\x00{scope[1]}".encode()).hexdigest()
    return f"s{digest[:32]}"


# A row numbered -1 when the scope holds an active fact (the index on agentId, userId,
# retiredAt answers it).
_ACTIVE = (
    'SELECT -1, NULL, NULL WHERE EXISTS (SELECT 1 FROM "Fact" WHERE "agentId" = :agent '
    'AND "userId" = :user AND "retiredAt" IS NULL)'
)


@functools.lru_cache(maxsize=64)
def _terms_statement(count: int, cap: int) -> TextClause:
    """Whether the scope holds an active fact, and up to ``cap + 1`` facts for each of
    ``count`` terms, unranked, so FTS5 stops early (bm25 would visit every match)."""
    return text(
        " UNION ALL ".join(
            [_ACTIVE]
            + [
                f'SELECT {n}, * FROM (SELECT "factId", text FROM "FactSearch" '
                f'WHERE "FactSearch" MATCH :term{n} LIMIT {cap + 1})'
                for n in range(count)
            ]
        )
    )


class SqliteFacts(SessionStorage):
    """:class:`~liz.facts.storage.FactStorage` for SQLite."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        sessions: async_sessionmaker[AsyncSession] | None = None,
        cache_scopes: int = 64,
    ) -> None:
        super().__init__(engine, sessions)
        self._cache = ScopeCache(cache_scopes)

    async def term_matches(
        self, session: AsyncSession, scope: Scope, terms: Sequence[str], *, cap: int
    ) -> tuple[bool, dict[str, dict[str, str]]]:
        self._note_begin(session)
        token = scope_token(scope)  # terms are letters and digits only
        values = {f"term{n}": f'scope : "{token}" AND text : "{t}"' for n, t in enumerate(terms)}
        rows = await session.execute(
            _terms_statement(len(terms), cap), {**scope_values(scope), **values}
        )
        return term_hits(rows, terms, cap)

    async def vector_candidates(self, session: AsyncSession, wanted: Nearest) -> list[Candidate]:
        vector = wanted.vector
        vectors = await self._vectors(session, wanted.scope, wanted.model, vector.size)
        return best_candidates(vectors, vector, limit=wanted.limit, threshold=wanted.threshold)

    async def similarities(
        self, session: AsyncSession, scope: Scope, ids: Sequence[str], query: Vector, *, model: str
    ) -> dict[str, float]:
        vectors = await self._vectors(session, scope, model, query.size)
        return similarities_in(vectors, ids, query)

    def _note_begin(self, session: AsyncSession) -> None:
        """Note the cache's epoch when the session's snapshot is about to begin (see
        ScopeCache.take_history): a snapshot begun later holds every row known then."""
        if not session.in_transaction():
            session.info[_EPOCH] = self._cache.epoch

    async def _vectors(
        self, session: AsyncSession, scope: Scope, model: str, dimension: int
    ) -> ScopeVectors:
        self._note_begin(session)
        # Once per transaction: its snapshot does not change.
        memo = ("liz.facts.sqlite", scope, model, dimension)
        transaction = session.sync_session.get_transaction()
        known = session.info.get(memo)
        if known is not None and transaction is not None and known[0] is transaction:
            vectors: ScopeVectors = known[1]
            return vectors
        history, bounds = await read_history(session, self._cache.history_mark, scope)
        mark = self._cache.take_history(history, session.info.get(_EPOCH))
        await check_models(session, scope, bounds, model, dimension)
        cached = self._cache.get(scope)
        if cached is None or cached.bounds != bounds:
            cached = await _load(session, scope, bounds, dimension)
            self._cache.put(scope, cached, mark)
        session.info[memo] = (session.sync_session.get_transaction(), cached)
        return cached

    async def index_rows(self, session: AsyncSession, rows: Rows, log: ChangeLog) -> None:
        inserted = {row["id"] for row in rows.facts}
        removed = [*log.removed, *(fact.id for fact in log.added if fact.id not in inserted)]
        if removed:
            rowids = [search_rowid(fact_id) for fact_id in removed]
            await session.execute(_DELETE_SEARCH, {"rowids": rowids})
        if log.added:
            added = [
                {
                    "rowid": search_rowid(fact.id),
                    "fact": fact.id,
                    "scope": scope_token((fact.agent_id, fact.user_id)),
                    "text": fact.text,
                }
                for fact in log.added
            ]
            await session.execute(_INSERT_SEARCH, added)

    def absorb(self, scope: Scope, log: ChangeLog) -> None:
        # Patching costs the same at any scope size, where a reload reads every vector.
        self._cache.absorb(scope, log)

    def forget(self, scopes: Iterable[Scope]) -> None:
        self._cache.invalidate(scopes)


async def _load(
    session: AsyncSession, scope: Scope, bounds: tuple[ModelPair, ...], dimension: int
) -> ScopeVectors:
    """The scope's active vectors, read in one statement."""
    rows = (await session.execute(_SCOPE_VECTORS, scope_values(scope))).all()
    if rows:
        # One buffer, one copy, rather than a small array per row.
        matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype="<f4")
        matrix = matrix.astype(np.float32).reshape(len(rows), -1)
    else:
        matrix = np.zeros((0, dimension), dtype=np.float32)
    return ScopeVectors([row[0] for row in rows], [row[2] for row in rows], matrix, bounds)


def best_candidates(
    vectors: ScopeVectors, query: Vector, *, limit: int, threshold: float
) -> list[Candidate]:
    """The ``limit`` facts of ``vectors`` most similar to ``query``, at least ``threshold``."""
    if not vectors.ids:
        return []
    fetch = limit + TIE_MARGIN
    rows, similarities = vectors.nearest(query, fetch)
    scores = np.round(similarities, 6)
    exhausted = len(vectors.ids) < fetch
    top = (
        range(len(scores)) if len(scores) <= fetch else np.argpartition(-scores, fetch - 1)[:fetch]
    )
    found = [(vectors.ids[rows[i]], rounded(scores[i]), vectors.hashes[rows[i]]) for i in top]
    chosen = deterministic_top(found, limit, exhausted)
    return [candidate for candidate in chosen if candidate[1] >= threshold]


def similarities_in(vectors: ScopeVectors, ids: Sequence[str], query: Vector) -> dict[str, float]:
    """The similarity of each of ``ids`` found in ``vectors`` to ``query``."""
    found = [fact_id for fact_id in ids if fact_id in vectors.rows]
    if not found:
        return {}
    rows = vectors.matrix[[vectors.rows[fact_id] for fact_id in found]]
    return dict(zip(found, map(rounded, similarities_to(rows, query)), strict=True))
