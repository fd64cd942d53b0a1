"""Facts on PostgreSQL: pgvector (HNSW, cosine) and full-text search (GIN, ``simple``).

``Fact.embedding`` is a ``vector`` of any dimension, with a partial HNSW index per
dimension in use. The scope's own size, not the planner's statistics, decides a
vector search: a small scope is compared in full, a larger one walks the graph, and
a walk that gives up falls back to the full comparison. Small writes leave their
vectors out of the graph for liz.facts.postgres.indexing to put in after the commit.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Boolean, TableClause, TextClause, column, insert, table, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.errors import UsageError
from liz.facts.domain import Candidate, ChangeLog, ModelPair, Scope
from liz.facts.postgres.indexing import BackgroundIndexing
from liz.facts.queries import HISTORIES, check_models
from liz.facts.search import TIE_MARGIN, deterministic_top
from liz.facts.storage import Nearest, SessionStorage, term_hits
from liz.facts.tables import FactRecord
from liz.facts.vectors import Vector, rounded
from liz.facts.writes import Rows
from liz.types import Clock

logger = logging.getLogger(__name__)

# A write of at most this many facts leaves their vectors for the background indexing;
# a bulk write puts them into the graph at once.
PENDING_FACTS = 100
# "Fact" with the column only PostgreSQL has: a vector not yet in the HNSW graph.
_FACTS = table(
    "Fact",
    *(column(c.name, c.type) for c in FactRecord.__table__.columns),
    column("vectorPending", Boolean()),
)
_ADVISORY_LOCK = text("SELECT pg_advisory_xact_lock(:key)")

# Candidates HNSW keeps per search; above the default (40) for recall close to exact.
EF_SEARCH = 200
MAX_EF_SEARCH = 1000  # pgvector's limit
MAX_DIMENSION = 2000  # pgvector's HNSW limit for `vector`
# A scope is searched exactly while it holds at most this many vector components (facts
# times dimension); past that, through the graph.
EXACT_COMPONENTS = 2_560_000

_SCOPE = '"agentId" = :agent AND "userId" = :user'
_BOUND = (
    f'SELECT "embeddingModel", "embeddingDim" FROM "Fact" WHERE {_SCOPE} '
    'ORDER BY "embeddingModel" {0}, "embeddingDim" {0} LIMIT 1'
)
# The scope's (model, dimension) bounds and its active facts counted up to :counted.
BOUNDS = f"({_BOUND.format('ASC')}) UNION ALL ({_BOUND.format('DESC')})"
ACTIVE_COUNT = (
    'SELECT count(*) AS n FROM (SELECT 1 FROM "Fact" '
    f'WHERE {_SCOPE} AND "retiredAt" IS NULL LIMIT :counted) AS scope'
)
# A graph search's settings, for this transaction; `enable_sort` off in a large scope
# leaves the ordered HNSW scan as the only plan without a sort.
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
# Unranked and limited per term: ts_rank would read every match first.
ONE_TERM = (
    f'SELECT id, text FROM "Fact" WHERE {_SCOPE} '
    'AND "retiredAt" IS NULL AND "searchVector" @@ to_tsquery(\'simple\', :term{n})'
)
_ACTIVE_OF_DIM = f'WHERE {_SCOPE} AND "retiredAt" IS NULL AND "embeddingDim" = {{dim}} '
# Bound as a binary real[] and cast once in a scalar subquery (inline, a generic plan
# casts it for every row compared).
_QUERY = "(SELECT CAST(CAST(:query AS real[]) AS vector{size}))"
# Rows of (id, similarity, hash, part); part: false from the graph or the exact scan,
# true from the facts not yet in the graph, NULL by id (with the scope after it). The
# graph's statement repeats the partial index's expression and predicate, so the
# planner walks the graph.
_HNSW = (
    "(SELECT id, 1 - ((embedding::vector({dim})) <=> "
    f"{_QUERY.format(size='({dim})')}) AS similarity, hash, false AS part "
    f'FROM "Fact" {_ACTIVE_OF_DIM}AND NOT "vectorPending" '
    f"ORDER BY (embedding::vector({{dim}})) <=> {_QUERY.format(size='({dim})')} LIMIT :limit) "
    f"UNION ALL (SELECT id, 1 - (embedding <=> {_QUERY.format(size='')}) AS similarity, "
    "hash, true AS part "
    f'FROM "Fact" {_ACTIVE_OF_DIM}AND "vectorPending" '
    f"ORDER BY embedding <=> {_QUERY.format(size='')} LIMIT :limit)"
)
# Not the index's expression: the planner cannot take the (approximate) graph for it.
_EXACT = (
    f"SELECT id, 1 - (embedding <=> {_QUERY.format(size='')}) AS similarity, "
    "hash, false AS part "
    f'FROM "Fact" {_ACTIVE_OF_DIM}'
    f"ORDER BY embedding <=> {_QUERY.format(size='')} LIMIT :limit"
)
# By primary key only (the planner would walk the scope index): check the scope on rows.
_BY_ID = (
    "SELECT id, 1 - ((embedding::vector({dim})) <=> "
    f"{_QUERY.format(size='({dim})')}) AS similarity, hash, NULL::boolean AS part, "
    '"agentId", "userId" FROM "Fact" '
    'WHERE id = ANY(:ids) AND "embeddingDim" = {dim} AND "embeddingModel" = :model'
)


@functools.lru_cache(maxsize=64)
def vector_search(dimension: int, *, graph: bool) -> TextClause:
    """The scope's ``:limit`` facts nearest ``:query`` through the graph (and the
    pending facts), or by comparing every one."""
    return text((_HNSW if graph else _EXACT).format(dim=dimension))


@functools.lru_cache(maxsize=64)
def similarities_by_id(dimension: int) -> TextClause:
    """The similarity to ``:query`` of the facts of ``:model`` whose ids are ``:ids``, with
    their scope."""
    return text(_BY_ID.format(dim=dimension))


def ef_search(wanted: int) -> int:
    """How many candidates the graph keeps, for ``wanted`` of them."""
    return min(MAX_EF_SEARCH, max(EF_SEARCH, wanted))


def scope_lock_key(scope: Scope) -> int:
    """The key of the scope's advisory lock, the same in every process."""
    digest = hashlib.sha256(f"liz-facts\x00{scope[0]}\x00{scope[1]}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


# A row numbered -1 when the scope holds an active fact.
_ACTIVE = (
    "SELECT -1, NULL, NULL WHERE EXISTS "
    f'(SELECT 1 FROM "Fact" WHERE {_SCOPE} AND "retiredAt" IS NULL)'
)


@functools.lru_cache(maxsize=32)
def _terms_statement(count: int) -> TextClause:
    parts = [
        f"SELECT {n}, * FROM ({ONE_TERM.format(n=n)} LIMIT :most) AS term{n}" for n in range(count)
    ]
    return text(" UNION ALL ".join([_ACTIVE, *parts]))


# Runs a vector search, through the graph (True) or exact, into its two parts.
Search = Callable[[bool], Awaitable[tuple[list[Candidate], list[Candidate]]]]


class PostgresFacts(SessionStorage):
    """:class:`~liz.facts.storage.FactStorage` for PostgreSQL with pgvector."""

    facts_table: TableClause = _FACTS

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        sessions: async_sessionmaker[AsyncSession] | None = None,
        exact_components: int = EXACT_COMPONENTS,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(engine, sessions)
        self._engine = engine
        self._exact_components = exact_components
        self._prepared: set[int] = set()
        self.indexing = BackgroundIndexing(engine, clock=clock)

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
                await connection.execute(
                    text(
                        f'CREATE INDEX IF NOT EXISTS "Fact_embedding_hnsw_{dimension}" ON "Fact" '
                        f"USING hnsw ((embedding::vector({dimension})) vector_cosine_ops) "
                        f'WHERE "embeddingDim" = {dimension} AND NOT "vectorPending"'
                    )
                )
        except DBAPIError as exc:
            # Another process creating the same index at the same moment: it exists now.
            logger.info("HNSW index for dimension %d not created here: %s", dimension, exc)
        self._prepared.add(dimension)

    async def close(self) -> None:
        await self.indexing.finish()

    async def lock(self, session: AsyncSession, scope: Scope) -> None:
        await session.execute(_ADVISORY_LOCK, {"key": scope_lock_key(scope)})

    async def index_rows(self, session: AsyncSession, rows: Rows, log: ChangeLog) -> None:
        return None  # the GIN index follows the table; HNSW too, or after the indexing

    def absorb(self, scope: Scope, log: ChangeLog) -> None:
        if log.added and len(log.added) <= PENDING_FACTS:
            self.indexing.wake()

    async def _send(self, session: AsyncSession, rows: Rows, log: ChangeLog) -> None:
        small = len(log.added) <= PENDING_FACTS
        if small:  # the graph's inserts wait for the indexing
            for row in rows.facts:
                row["vectorPending"] = True
            for row in rows.updates:
                if "embedding" in row:
                    row["vectorPending"] = True
        if not (small and rows.facts) or rows.updates:
            await super()._send(session, rows, log)
            return
        # A few new facts and their history in one round trip (the foreign key is checked
        # at the statement's end); history ids serve SQLite's cache only.
        added = insert(self.facts_table).values(rows.facts).cte("added")
        await session.execute(insert(HISTORIES).values(rows.history).add_cte(added))

    def _counted_up_to(self, dimension: int, wanted: int) -> int:
        """How far a plan counts the scope's active facts: a count this high may be
        short of the scope's size."""
        return max(self._exact_components // dimension, wanted) + 1

    async def vector_parts(
        self, search: Search, *, active: int, dimension: int, wanted: int
    ) -> tuple[list[Candidate], list[Candidate]]:
        """``search``'s candidates from the graph (or the exact scan) and from the facts
        not yet in the graph: through the graph for a large scope, and by comparing every
        fact when the scope is small or the graph's walk found too few of its facts."""
        if active <= self._exact_components // dimension:
            return await search(False)
        graph, pending = await search(True)
        if pending:
            self.indexing.wake()  # left by a step that failed, or by another process
        # A count that reached its limit says only "at least" that many facts.
        counted_all = active < self._counted_up_to(dimension, wanted)
        if len(graph) < wanted and not (counted_all and len(graph) >= active - len(pending)):
            # HNSW gave up before finding enough of the scope's facts: compare them all.
            graph, pending = await search(False)
        return graph, pending

    async def vector_candidates(self, session: AsyncSession, lookup: Nearest) -> list[Candidate]:
        scope, model, query = lookup.scope, lookup.model, lookup.vector
        limit, threshold = lookup.limit, lookup.threshold
        wanted = limit + TIE_MARGIN
        dimension = int(query.size)
        bounds, active = await self._plan(session, scope, wanted, dimension)
        await check_models(session, scope, bounds, model, dimension)
        if not active:
            return []
        values = {"query": query.tolist(), "agent": scope[0], "user": scope[1], "limit": wanted}

        async def search(graph: bool) -> tuple[list[Candidate], list[Candidate]]:
            return split_parts(await session.execute(vector_search(dimension, graph=graph), values))

        parts = await self.vector_parts(search, active=active, dimension=dimension, wanted=wanted)
        return nearest(parts, wanted, limit=limit, threshold=threshold)

    async def _plan(
        self, session: AsyncSession, scope: Scope, wanted: int, dimension: int
    ) -> tuple[tuple[ModelPair, ...], int]:
        """The scope's model bounds and its count of active facts, in one round trip
        that also tunes the HNSW scan for this transaction."""
        values = {
            "agent": scope[0],
            "user": scope[1],
            "exact": self._exact_components // dimension,
            "counted": self._counted_up_to(dimension, wanted),
            "ef": str(ef_search(wanted)),
        }
        rows = (await session.execute(_PLAN, values)).all()
        bounds = tuple((row[0], int(row[1])) for row in rows)
        return bounds, int(rows[0][2]) if rows else 0

    async def similarities(
        self, session: AsyncSession, scope: Scope, ids: Sequence[str], query: Vector, *, model: str
    ) -> dict[str, float]:
        if not ids:
            return {}
        # A fact of another model is left unscored (the vector search refused a scope
        # of mixed models already).
        values = {"query": query.tolist(), "ids": list(ids), "model": model}
        result = await session.execute(similarities_by_id(int(query.size)), values)
        return {row[0]: rounded(row[1]) for row in result if (row[4], row[5]) == scope}

    async def term_matches(
        self, session: AsyncSession, scope: Scope, terms: Sequence[str], *, cap: int
    ) -> tuple[bool, dict[str, dict[str, str]]]:
        values: dict[str, Any] = {"agent": scope[0], "user": scope[1], "most": cap + 1}
        # Quoted for to_tsquery: terms are letters and digits only (liz.facts.normalize).
        values.update((f"term{n}", f"'{term}'") for n, term in enumerate(terms))
        return term_hits(await session.execute(_terms_statement(len(terms)), values), terms, cap)


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

    Below the highest cut no order is known, so those candidates are left out; of
    the rest only the ``wanted`` best are kept, so that the graph with its pending
    facts sees no further past a group of ties than one exact list does.
    """
    cuts = [min(candidate[1] for candidate in part) for part in parts if len(part) >= wanted]
    found = [candidate for part in parts for candidate in part]
    if cuts:
        floor = max(cuts)
        found = [candidate for candidate in found if candidate[1] >= floor]
    found.sort(key=lambda candidate: (-candidate[1], candidate[2]))
    return found[:wanted], len(found) < wanted
