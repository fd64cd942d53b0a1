"""Search on SQLite: vectors scanned with numpy from a per-scope cache, keywords with FTS5.

This Python cannot load SQLite extensions (so no ``sqlite-vec`` without swapping
the driver for everyone). An exact scan is also what keeps SQLite's answers equal
to PostgreSQL's: one scope's vectors are read once into a float32 matrix and a
search is one matrix-vector product (10k facts x 1536 dimensions is ~60 MB and a
few ms; a large scope of long vectors is ranked by sign bits first, see
ScopeVectors.nearest); liz.facts.index.sqlite_cache keeps those matrices in step
with writes. Each read is one call on the connection's thread (liz.facts.sqlite_thread);
a search's reads are one such call off any session (:meth:`SqliteFactIndex.search_reads`,
for liz.facts.sqlite_search).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Sequence
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
    models_mismatch,
)
from liz.facts.index.sqlite_cache import ScopeCache, ScopeVectors
from liz.facts.index.sqlite_history import History, read_history
from liz.facts.sqlite_thread import ThreadConnection, run_on_thread
from liz.facts.vectors import Vector, rounded, similarities_to

# Run on the bare connection (liz.facts.sqlite_thread), as the protocol's helpers would.
_SCOPE_VECTORS = (
    'SELECT id, embedding, hash FROM "Fact" '
    'WHERE "agentId" = ? AND "userId" = ? AND "retiredAt" IS NULL ORDER BY id'
)
_MODEL_BOUND = (
    'SELECT "embeddingModel", "embeddingDim" FROM "Fact" WHERE "agentId" = ?1 '
    'AND "userId" = ?2 ORDER BY "embeddingModel" {0}, "embeddingDim" {0} LIMIT 1'
)
_MODEL_BOUNDS = (
    f"SELECT * FROM ({_MODEL_BOUND.format('ASC')}) "
    f"UNION ALL SELECT * FROM ({_MODEL_BOUND.format('DESC')})"
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


def _model_bounds(db: sqlite3.Connection, scope: Scope) -> tuple[ModelPair, ...]:
    """:func:`~liz.facts.index.protocol.model_bounds` on the bare connection."""
    return tuple((row[0], int(row[1])) for row in db.execute(_MODEL_BOUNDS, scope))


def _load(
    db: sqlite3.Connection, scope: Scope, bounds: tuple[ModelPair, ...], dimension: int
) -> ScopeVectors:
    """The scope's active vectors, read in one statement."""
    rows = db.execute(_SCOPE_VECTORS, scope).fetchall()
    if rows:
        # One buffer, one copy: stacking a small array per row took three times as long.
        matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype="<f4")
        matrix = matrix.astype(np.float32).reshape(len(rows), -1)
    else:
        matrix = np.zeros((0, dimension), dtype=np.float32)
    return ScopeVectors([row[0] for row in rows], [row[2] for row in rows], matrix, bounds)


def _sized(vectors: ScopeVectors, dimension: int) -> ScopeVectors:
    """``vectors``, or, if it holds none, no vectors of ``dimension`` (so writes fit in)."""
    if vectors.ids or vectors.matrix.shape[1] == dimension:
        return vectors
    return ScopeVectors([], [], np.zeros((0, dimension), dtype=np.float32), vectors.bounds)


def _term_matches(
    db: sqlite3.Connection, token: str, terms: Sequence[str], cap: int
) -> dict[str, dict[str, str]]:
    """For each term, up to ``cap + 1`` active facts of the scope holding it, in one
    statement (terms are letters and digits only: liz.facts.normalize)."""
    parts = [
        f'SELECT {number}, * FROM (SELECT "factId", text FROM "FactSearch" '
        f'WHERE "FactSearch" MATCH ? LIMIT {cap + 1})'
        for number in range(len(terms))
    ]
    bound = [f'scope : "{token}" AND text : "{term}"' for term in terms]
    found: dict[str, dict[str, str]] = {term: {} for term in terms}
    for number, fact_id, fact_text in db.execute(" UNION ALL ".join(parts), bound):
        found[terms[number]][fact_id] = fact_text
    return found


_READ_WITH_TERMS = "liz.facts.index.sqlite.read_with_terms"


def _scope_state(
    scope: Scope, since: int | None
) -> Callable[[sqlite3.Connection], tuple[History, tuple[ModelPair, ...]]]:
    """What a scope's vectors are checked against: the history since ``since`` and the
    scope's embedding models, read in one call on the connection's thread."""
    return lambda db: (read_history(db, since), _model_bounds(db, scope))


@dataclass(frozen=True)
class ScopeRead:
    """What the first hop of a search reads, on one snapshot (see :func:`_read_scope`)."""

    matches: dict[str, dict[str, str]]
    history: History
    bounds: tuple[ModelPair, ...]
    loaded: ScopeVectors | None  # read only when the cache did not hold the scope


_DISTINCT_MODELS = (
    'SELECT DISTINCT "embeddingModel", "embeddingDim" FROM "Fact" '
    'WHERE "agentId" = ? AND "userId" = ?'
)


def _read_scope(
    scope: Scope, terms: Sequence[str], cap: int, since: int | None, load: bool
) -> Callable[[sqlite3.Connection], ScopeRead]:
    """A search's reads of the scope, in one transaction: the keyword matches, what the
    cached vectors are checked against, and the vectors themselves when ``load``."""
    token = scope_token(scope)

    def read(db: sqlite3.Connection) -> ScopeRead:
        db.execute("BEGIN")
        try:
            matches = _term_matches(db, token, terms, cap) if terms else {}
            history = read_history(db, since)
            bounds = _model_bounds(db, scope)
            # Mixed models are refused before any vector is compared: nothing to load.
            loaded = _load(db, scope, bounds, 0) if load and len(set(bounds)) <= 1 else None
        finally:
            db.execute("ROLLBACK")  # it only read
        return ScopeRead(matches, history, bounds, loaded)

    return read


async def _refuse_other_models(
    connection: ThreadConnection,
    scope: Scope,
    bounds: tuple[ModelPair, ...],
    model: str,
    dimension: int,
) -> None:
    """:func:`~liz.facts.index.protocol.check_models` on a bare connection."""
    if all(pair == (model, dimension) for pair in bounds):
        return
    stored = await connection.run(lambda db: db.execute(_DISTINCT_MODELS, scope).fetchall())
    raise models_mismatch(scope, [(row[0], int(row[1])) for row in stored], model, dimension)


class SqliteFactIndex:
    """The :class:`~liz.facts.index.protocol.FactIndex` for SQLite."""

    def __init__(self, max_scopes: int = 64) -> None:
        self._cache = ScopeCache(max_scopes)

    async def _vectors(
        self, session: AsyncSession, scope: Scope, model: str, dimension: int
    ) -> ScopeVectors:
        # Once per transaction: its snapshot does not change (learning asks once per new
        # fact, a search once more for its keyword hits).
        memo = ("liz.facts.index.sqlite", scope, model, dimension)
        transaction = session.sync_session.get_transaction()
        known = session.info.get(memo)
        if known is not None and transaction is not None and known[0] is transaction:
            vectors: ScopeVectors = known[1]
            return vectors
        connection = await session.connection()
        read_before = session.info.pop((_READ_WITH_TERMS, scope), None)
        if read_before is not None and read_before[0] is transaction:
            history, bounds = read_before[1]  # by term_matches, in the same hop
        else:
            history, bounds = await run_on_thread(
                connection, _scope_state(scope, self._cache.history_mark)
            )
        mark = self._cache.take_history(history)
        await check_models(session, scope, bounds, model, dimension)
        cached = self._cache.get(scope)
        if cached is None or cached.bounds != bounds:
            cached = await run_on_thread(connection, lambda db: _load(db, scope, bounds, dimension))
            self._cache.put(scope, cached, mark)
        session.info[memo] = (session.sync_session.get_transaction(), cached)
        return cached

    async def vector_candidates(
        self,
        session: AsyncSession,
        scope: Scope,
        query: Vector | Awaitable[Vector],
        *,
        model: str,
        limit: int,
        threshold: float,
    ) -> list[Candidate]:
        if not isinstance(query, np.ndarray):
            query = await query
        vectors = await self._vectors(session, scope, model, query.size)
        return best_candidates(vectors, query, limit=limit, threshold=threshold)

    async def similarities(
        self, session: AsyncSession, scope: Scope, ids: Sequence[str], query: Vector, *, model: str
    ) -> dict[str, float]:
        vectors = await self._vectors(session, scope, model, query.size)
        return similarities_in(vectors, ids, query)

    async def search_reads(
        self,
        connection: ThreadConnection,
        scope: Scope,
        terms: Sequence[str],
        query: Awaitable[Vector],
        *,
        cap: int,
        model: str,
    ) -> tuple[dict[str, dict[str, str]], ScopeVectors, Vector]:
        """What a search reads, off any session: :meth:`term_matches`, the scope's
        vectors and the query (awaited meanwhile), in one hop to the connection's
        thread (two when another process changed the scope since it was cached)."""
        load = self._cache.get(scope) is None
        issued = self._cache.epoch  # the read's snapshot begins with it (see take_history)
        read = await connection.run(_read_scope(scope, terms, cap, self._cache.history_mark, load))
        vector = await query
        mark = self._cache.take_history(read.history, issued)
        await _refuse_other_models(connection, scope, read.bounds, model, vector.size)
        matches = {term: hits for term, hits in read.matches.items() if len(hits) <= cap}
        cached = self._cache.get(scope)
        if cached is not None and cached.bounds == read.bounds:
            return matches, cached, vector
        loaded = read.loaded
        if loaded is None:  # dropped meanwhile: changed by another process
            issued = self._cache.epoch
            reread = await connection.run(_read_scope(scope, (), 0, self._cache.history_mark, True))
            mark = self._cache.take_history(reread.history, issued)
            await _refuse_other_models(connection, scope, reread.bounds, model, vector.size)
            loaded = reread.loaded
        if loaded is None:
            raise RuntimeError("the scope's vectors were read but not returned")
        loaded = _sized(loaded, vector.size)
        self._cache.put(scope, loaded, mark)
        return matches, loaded, vector

    async def term_matches(
        self, session: AsyncSession, scope: Scope, terms: Sequence[str], *, cap: int
    ) -> dict[str, dict[str, str]]:
        # Unranked, so FTS5 stops after `cap + 1` matches; ranking (bm25) would visit every
        # match, and a word in every fact ("User's" holds "s") made that a scan of the scope.
        # The same hop reads what the vectors need next (see _vectors): a search makes
        # one hop fewer to the connection's thread.
        token = scope_token(scope)
        connection = await session.connection()
        state = _scope_state(scope, self._cache.history_mark)
        found, read = await run_on_thread(
            connection,
            lambda db: (_term_matches(db, token, terms, cap) if terms else {}, state(db)),
        )
        session.info[(_READ_WITH_TERMS, scope)] = (session.sync_session.get_transaction(), read)
        return {term: hits for term, hits in found.items() if len(hits) <= cap}

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
