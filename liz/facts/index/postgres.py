"""Search on PostgreSQL: pgvector (HNSW, cosine) and full-text search (GIN, ``simple``).

Embedding dimensions differ by model, so ``Fact.embedding`` is a ``vector`` of
any dimension, and HNSW (which needs one) gets a partial expression index per
dimension in use: ``(embedding::vector(N)) vector_cosine_ops WHERE
"embeddingDim" = N``, made the first time a dimension is written or searched.
Switching models then needs no migration and keeps the old index until dropped.

Which way a vector search goes is decided here, per search, from the scope's own
size, never left to the planner: its row estimates come from statistics that lag
behind bulk writes and average over users. When they said "a few rows" for a scope
of 100k facts, it compared every one of them (600 ms); when they said "many" for a
scope that is a sliver of a large table, the graph alone would have missed facts.
A scope of at most ``EXACT_COMPONENTS`` (facts times dimension) is compared in
full, exactly; a larger one walks the HNSW graph with pgvector's iterative scan,
which keeps going past ``ef_search`` until enough of the scope's facts turn up, and
when even that gives up (``hnsw.max_scan_tuples``) the scope is compared in full.

Facts a small write just added or re-embedded are not in the graph yet
(liz.facts.pg_indexing puts them in after the commit): the graph's search compares
the scope's pending facts exactly in the same statement, so none is ever missed.

The statements and decisions here serve two callers: this index's session methods
(liz.facts.search, learning's reconciliation) and liz.facts.pg_search, which runs the
same statements on the driver's connection for FactStore.search.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import numpy as np
from sqlalchemy import TextClause, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from liz.errors import UsageError
from liz.facts.domain import Scope
from liz.facts.index.pg_cache import MAX_VALUES as HELD_VALUES
from liz.facts.index.pg_cache import PostgresScopeCache
from liz.facts.index.protocol import (
    TIE_MARGIN,
    Candidate,
    ChangeLog,
    IndexedFact,
    ModelPair,
    check_models,
    deterministic_top,
    matches_per_term,
    model_bounds,
)
from liz.facts.pg_indexing import BackgroundIndexing
from liz.facts.vectors import Vector, rounded

logger = logging.getLogger(__name__)

# Candidates HNSW keeps per search; above the default (40) for recall close to exact.
EF_SEARCH = 200
MAX_EF_SEARCH = 1000  # pgvector's limit
MAX_DIMENSION = 2000  # pgvector's HNSW limit for `vector`
# A scope is searched exactly while it holds at most this many vector components (facts
# times dimension): 10,000 facts of 256 dimensions, 1,666 of 1536, each scan a few
# milliseconds; past that the graph answers in about one, whatever the scope's size.
EXACT_COMPONENTS = 2_560_000

_SCOPE = '"agentId" = :agent AND "userId" = :user'
_BOUND = (
    f'SELECT "embeddingModel", "embeddingDim" FROM "Fact" WHERE {_SCOPE} '
    'ORDER BY "embeddingModel" {0}, "embeddingDim" {0} LIMIT 1'
)
# The scope's (model, dimension) bounds as liz.facts.index.protocol.model_bounds reads
# them, and its active facts counted up to :counted: what decides a vector search.
BOUNDS = f"({_BOUND.format('ASC')}) UNION ALL ({_BOUND.format('DESC')})"
ACTIVE_COUNT = (
    'SELECT count(*) AS n FROM (SELECT 1 FROM "Fact" '
    f'WHERE {_SCOPE} AND "retiredAt" IS NULL LIMIT :counted) AS scope'
)
# The scope's newest history id (what liz.facts.index.pg_cache's copies are current to).
NEWEST_HISTORY = f'SELECT coalesce(max(id), 0)::bigint AS n FROM "FactHistory" WHERE {_SCOPE}'
# The session's settings for a graph search, for this transaction only. `enable_sort`
# off when the scope is large makes the ordered HNSW scan the only plan without a sort.
_TUNING = (
    "set_config('hnsw.ef_search', {ef}, true), "
    "set_config('hnsw.iterative_scan', 'strict_order', true), "
    "set_config('enable_sort', {sort}, true)"
)
# Before a vector search, in one round trip: the bounds, the count and the tuning.
_PLAN = text(
    f"WITH active AS ({ACTIVE_COUNT}) "
    'SELECT bounds."embeddingModel", bounds."embeddingDim", active.n, '
    + _TUNING.format(
        ef=":ef",
        sort="CASE WHEN active.n > :exact THEN 'off' ELSE current_setting('enable_sort') END",
    )
    + f" FROM ({BOUNDS}) AS bounds, active"
)
# The same tuning for a scope known to be large, in a transaction it begins (one simple
# query, the value inlined: a number computed here).
TUNED_BEGIN = "BEGIN; SELECT " + _TUNING.format(ef="'{ef}'", sort="'off'")
# Unranked and limited per term (liz.facts.index.protocol.terms_statement): ts_rank
# would read every match first.
ONE_TERM = (
    f'SELECT id, text FROM "Fact" WHERE {_SCOPE} '
    'AND "retiredAt" IS NULL AND "searchVector" @@ to_tsquery(\'simple\', :term{n})'
)
_ACTIVE = f'WHERE {_SCOPE} AND "retiredAt" IS NULL AND "embeddingDim" = {{dim}} '
# The query vector is bound as a list of floats, which the driver sends as a binary
# real[] (writing 1536 floats as text took 1.3 ms of Python): QUERY_AS_REAL_ARRAY. Or,
# on a connection liz.facts.pg_vectors set up, as pgvector's own binary form, half the
# bytes and made by numpy at once (liz.facts.pg_search): QUERY_AS_VECTOR. Either is
# cast here, once: in a scalar subquery. Written inline, the cast ran for every row
# compared as soon as the server switched the prepared statement to its generic plan
# (after five runs): 8.9 ms instead of 1.4 for an exact search of 1,000 facts of 1536
# dimensions.
QUERY_AS_REAL_ARRAY = "CAST(:query AS real[])"
QUERY_AS_VECTOR = ":query"
_QUERY = "(SELECT CAST({{query}} AS vector{size}))"
# Every statement below selects (id, similarity, hash, part) and then ``{columns}``
# (empty, or ", " and more columns of "Fact"); the part says where a row comes from:
# false the graph or the exact scan, true the facts not yet in the graph, NULL by id.
#
# The partial index's own expression and predicate, so the planner can walk the graph
# in its order; and, in the same statement, the scope's facts not yet in the graph
# (liz.facts.pg_indexing), compared exactly.
_HNSW = (
    "(SELECT id, 1 - ((embedding::vector({dim})) <=> "
    f"{_QUERY.format(size='({dim})')}) AS similarity, hash, false AS part{{columns}} "
    f'FROM "Fact" {_ACTIVE}AND NOT "vectorPending" '
    f"ORDER BY (embedding::vector({{dim}})) <=> {_QUERY.format(size='({dim})')} LIMIT :limit) "
    f"UNION ALL (SELECT id, 1 - (embedding <=> {_QUERY.format(size='')}) AS similarity, "
    "hash, true AS part{columns} "
    f'FROM "Fact" {_ACTIVE}AND "vectorPending" '
    f"ORDER BY embedding <=> {_QUERY.format(size='')} LIMIT :limit)"
)
# Not the index's expression: the planner cannot take the (approximate) graph for it.
_EXACT = (
    f"SELECT id, 1 - (embedding <=> {_QUERY.format(size='')}) AS similarity, "
    "hash, false AS part{columns} "
    f'FROM "Fact" {_ACTIVE}'
    f"ORDER BY embedding <=> {_QUERY.format(size='')} LIMIT :limit"
)
# By primary key only (the planner would walk the scope index): check the scope on rows.
_BY_ID = (
    "SELECT id, 1 - ((embedding::vector({dim})) <=> "
    f"{_QUERY.format(size='({dim})')}) AS similarity, hash, NULL::boolean AS part{{columns}} "
    'FROM "Fact" '
    'WHERE id = ANY(:ids) AND "embeddingDim" = {dim}'
)


@functools.lru_cache(maxsize=64)
def vector_search(
    dimension: int, *, graph: bool, columns: str = "", query: str = QUERY_AS_REAL_ARRAY
) -> str:
    """The scope's ``:limit`` facts nearest ``:query`` (bound as ``query`` says) through
    the graph (and the pending facts), or by comparing every one; each row followed by
    ``columns``."""
    return (_HNSW if graph else _EXACT).format(dim=dimension, columns=columns, query=query)


@functools.lru_cache(maxsize=64)
def similarities_by_id(
    dimension: int, *, columns: str = "", query: str = QUERY_AS_REAL_ARRAY
) -> str:
    """The similarity to ``:query`` of the facts whose ids are ``:ids``, with ``columns``."""
    return _BY_ID.format(dim=dimension, columns=columns, query=query)


def ef_search(wanted: int) -> int:
    """How many candidates the graph keeps, for ``wanted`` of them."""
    return min(MAX_EF_SEARCH, max(EF_SEARCH, wanted))


def hnsw_index_statement(dimension: int) -> str:
    """The statement creating the HNSW index for embeddings of ``dimension``."""
    return (
        f'CREATE INDEX IF NOT EXISTS "Fact_embedding_hnsw_{dimension}" ON "Fact" '
        f"USING hnsw ((embedding::vector({dimension})) vector_cosine_ops) "
        f'WHERE "embeddingDim" = {dimension} AND NOT "vectorPending"'
    )


# Runs a vector search, through the graph (True) or exact, into its two parts.
Search = Callable[[bool], Awaitable[tuple[list[Candidate], list[Candidate]]]]


async def _arrived(query: Vector | Awaitable[Vector]) -> Vector:
    return query if isinstance(query, np.ndarray) else await query


@functools.lru_cache(maxsize=64)
def _statement(sql: str) -> TextClause:
    """``sql`` parsed once: building a ``text()`` each time was a tenth of a search's
    Python."""
    return text(sql)


class PostgresFactIndex:
    """The :class:`~liz.facts.index.protocol.FactIndex` for PostgreSQL with pgvector."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        exact_components: int = EXACT_COMPONENTS,
        held_values: int = HELD_VALUES,
    ) -> None:
        self._engine = engine
        self._exact_components = exact_components
        self._prepared: set[int] = set()
        self.dimensions: dict[str, int] = {}  # each embedding model's, as last searched
        # Puts the vectors small writes left pending into the HNSW graph.
        self.indexing = BackgroundIndexing(engine)
        # Small scopes' facts, compared in this process by liz.facts.pg_search.
        self.held = PostgresScopeCache(held_values)

    async def prepare_dimension(self, dimension: int) -> None:
        """Create the HNSW index for ``dimension`` if it is missing (once per process)."""
        if dimension in self._prepared:
            return
        if not 1 <= dimension <= MAX_DIMENSION:
            raise UsageError(
                f"embeddings of dimension {dimension} cannot be indexed by pgvector's HNSW "
                f"(at most {MAX_DIMENSION}); choose an embedding model with fewer dimensions"
            )
        try:
            async with self._engine.begin() as connection:
                await connection.execute(text(hnsw_index_statement(dimension)))
        except DBAPIError as exc:
            # Another process creating the same index at the same moment: it exists now.
            logger.info("HNSW index for dimension %d not created here: %s", dimension, exc)
        self._prepared.add(dimension)

    def plan_values(self, scope: Scope, wanted: int, dimension: int) -> dict[str, object]:
        """The values of a plan (:data:`ACTIVE_COUNT` and the tuning): the scope's active
        facts are counted up to one past the exact size for ``dimension`` or ``wanted``,
        whichever is more."""
        return {
            "agent": scope[0],
            "user": scope[1],
            "exact": self._exact_components // dimension,
            "counted": self._counted_up_to(dimension, wanted),
            "ef": str(ef_search(wanted)),
        }

    def _counted_up_to(self, dimension: int, wanted: int) -> int:
        """How far a plan counts the scope's active facts: a count this high may be
        short of the scope's size."""
        return max(self._exact_components // dimension, wanted) + 1

    def uses_graph(self, active: int, dimension: int) -> bool:
        """Whether a scope of ``active`` facts is searched through the HNSW graph first."""
        return active > self._exact_components // dimension

    async def vector_parts(
        self, search: Search, *, active: int, dimension: int, wanted: int
    ) -> tuple[list[Candidate], list[Candidate]]:
        """``search``'s candidates from the graph (or the exact scan) and from the facts
        not yet in the graph: through the graph for a large scope, and by comparing every
        fact when the scope is small or the graph's walk found too few of its facts."""
        if not self.uses_graph(active, dimension):
            return await search(False)
        graph, pending = await search(True)
        if pending:
            self.indexing.wake()  # left by a step that failed, or by another process
        # Fewer than wanted from the graph is every fact in it only if the count says so;
        # a count that reached its limit says only "at least" (a scope of 30 facts, 10 of
        # them pending, counted up to 19, looked whole with 10 from a graph that gave up).
        counted_all = active < self._counted_up_to(dimension, wanted)
        if len(graph) < wanted and not (counted_all and len(graph) >= active - len(pending)):
            # HNSW gave up before finding enough of the scope's facts (a scope that is a
            # small part of a large table): every fact is compared.
            graph, pending = await search(False)
        return graph, pending

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
        wanted = limit + TIE_MARGIN
        # The plan needs the query's dimension, not the query: with the model's dimension
        # known from an earlier search, it is read while the embedding is on its way.
        known = None if isinstance(query, np.ndarray) else self.dimensions.get(model)
        if known is None:
            vector = await _arrived(query)
            dimension = int(vector.size)
            bounds, active = await self._plan(session, scope, wanted, dimension)
        else:
            dimension = known
            bounds, active = await self._plan(session, scope, wanted, dimension)
            vector = await _arrived(query)
        if vector.size != dimension:  # the model's dimension changed: plan again
            dimension = int(vector.size)
            bounds, active = await self._plan(session, scope, wanted, dimension)
        self.dimensions[model] = dimension
        await check_models(session, scope, bounds, model, dimension)
        if not active:
            return []
        values = {"query": vector.tolist(), "agent": scope[0], "user": scope[1], "limit": wanted}

        async def search(graph: bool) -> tuple[list[Candidate], list[Candidate]]:
            result = await session.execute(
                _statement(vector_search(dimension, graph=graph)), values
            )
            return split_parts(result)

        parts = await self.vector_parts(search, active=active, dimension=dimension, wanted=wanted)
        return nearest(parts, wanted, limit=limit, threshold=threshold)

    async def _plan(
        self, session: AsyncSession, scope: Scope, wanted: int, dimension: int
    ) -> tuple[tuple[ModelPair, ...], int]:
        """The scope's model bounds and its count of active facts, in one round trip
        that also tunes the HNSW scan."""
        result = await session.execute(_PLAN, self.plan_values(scope, wanted, dimension))
        rows = result.all()
        bounds = tuple((row[0], int(row[1])) for row in rows)
        return bounds, int(rows[0][2]) if rows else 0

    async def similarities(
        self, session: AsyncSession, scope: Scope, ids: Sequence[str], query: Vector, *, model: str
    ) -> dict[str, float]:
        if not ids:
            return {}
        dimension = int(query.size)
        await check_models(session, scope, await model_bounds(session, scope), model, dimension)
        result = await session.execute(
            _statement(similarities_by_id(dimension, columns=', "agentId", "userId"')),
            {"query": query.tolist(), "ids": list(ids)},
        )
        return {row[0]: rounded(row[1]) for row in result if (row[4], row[5]) == scope}

    async def term_matches(
        self, session: AsyncSession, scope: Scope, terms: Sequence[str], *, cap: int
    ) -> dict[str, dict[str, str]]:
        return await matches_per_term(
            session,
            terms,
            cap=cap,
            one_term=ONE_TERM,
            bind=term_value,
            values={"agent": scope[0], "user": scope[1]},
        )

    async def facts_added(self, session: AsyncSession, facts: Iterable[IndexedFact]) -> None:
        return None  # the GIN index follows the table; HNSW too, or after liz.facts.pg_indexing

    async def facts_removed(self, session: AsyncSession, fact_ids: Iterable[str]) -> None:
        return None

    def invalidate(self, scopes: Iterable[Scope]) -> None:
        self.held.invalidate(scopes)

    def absorb(self, scope: Scope, log: ChangeLog) -> None:
        if log.added:  # a small write leaves its new vectors pending (liz.facts.pg_commit)
            self.indexing.wake()


def term_value(term: str) -> str:
    """A term as ``to_tsquery`` takes it: quoted (terms are letters and digits only)."""
    return f"'{term}'"


def split_parts(rows: Iterable[Sequence[Any]]) -> tuple[list[Candidate], list[Candidate]]:
    """A vector search's rows as candidates: from the graph (or the exact scan), and
    of facts not yet in the graph; rows fetched by id are left out."""
    parts: tuple[list[Candidate], list[Candidate]] = ([], [])
    for row in rows:
        if row[3] is not None:
            parts[1 if row[3] else 0].append((row[0], rounded(row[1]), row[2]))
    return parts


def nearest(
    parts: Sequence[Sequence[Candidate]], wanted: int, *, limit: int, threshold: float
) -> list[Candidate]:
    """The best ``limit`` of the parts' candidates (each part cut at ``wanted``), the
    same on every database, that are at least ``threshold`` similar."""
    found, exhausted = _merged(parts, wanted)
    chosen = deterministic_top(found, limit, exhausted=exhausted)
    return [candidate for candidate in chosen if candidate[1] >= threshold]


def _merged(parts: Sequence[Sequence[Candidate]], wanted: int) -> tuple[list[Candidate], bool]:
    """The ``wanted`` best candidates of lists each cut at ``wanted``, as one list cut at
    ``wanted`` gives them; and whether it was not cut (every fact was seen).

    Past the last candidate of a list that was cut, facts of that list went unseen;
    so below the highest such cut no order is known, and those candidates are left
    out. What remains is the ``wanted`` best or more, and only the ``wanted`` best are
    kept: with more, the graph and its pending facts would see past a group of ties
    that one exact list cuts through (and deterministic_top leaves out), and the two
    ways of searching would give different facts.
    """
    cuts = [min(candidate[1] for candidate in part) for part in parts if len(part) >= wanted]
    found = [candidate for part in parts for candidate in part]
    if cuts:
        floor = max(cuts)
        found = [candidate for candidate in found if candidate[1] >= floor]
    found.sort(key=lambda candidate: (-candidate[1], candidate[2]))
    return found[:wanted], len(found) < wanted
