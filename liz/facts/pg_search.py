"""Hybrid search on PostgreSQL on the pooled connection's own driver (asyncpg, through
liz.db.driver), not through a SQLAlchemy session.

liz.facts.search runs through a session: ``BEGIN``, the keyword matches, the plan
(liz.facts.index.postgres), the vector search, the similarities of keyword hits the
vector search did not rank (a model check and a read), the chosen facts, ``ROLLBACK``:
five to eight round trips, and the session's bookkeeping around each. Here a search of
a scope small enough to compare in full costs one round trip, sent while the query's
embedding is on its way: the keyword matches with the plan (the model bounds, the count
of active facts, the newest history id); the scope's facts are held in this process
(liz.facts.index.pg_cache, which reads what changed since its copy, before the
embedding comes) and compared here. A larger scope, searched through the HNSW graph,
needs the plan's settings for its transaction: a ``BEGIN`` that sets them (also sent
while the embedding is on its way), a second read once the embedding is there (the
nearest facts, the similarities of the keyword hits and the rows of those that can be
chosen) and a ``ROLLBACK`` after.

Each statement reads its own snapshot, as each of the session's does (read committed):
a fact retired between them is left out, as any retired fact is.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.driver import Driver, Statement, connect
from liz.db.errors import storage_error_for
from liz.facts.domain import Fact, Scope
from liz.facts.index.pg_cache import ScopeFacts
from liz.facts.index.postgres import (
    ACTIVE_COUNT,
    BOUNDS,
    NEWEST_HISTORY,
    ONE_TERM,
    QUERY_AS_VECTOR,
    TUNED_BEGIN,
    PostgresFactIndex,
    ef_search,
    nearest,
    similarities_by_id,
    split_parts,
    term_value,
    vector_search,
)
from liz.facts.index.protocol import (
    DISTINCT_MODELS,
    TIE_MARGIN,
    Candidate,
    ModelPair,
    models_agree,
    models_mismatch,
    terms_found,
    terms_statement,
)
from liz.facts.index.sqlite import best_candidates, similarities_in
from liz.facts.normalize import keyword_terms
from liz.facts.pg_vectors import send_vectors_binary
from liz.facts.queries import FACT_COLUMN_NAMES, fact_from_row
from liz.facts.search import CANDIDATE_FACTOR, COMMON_WORD_FACTS, MIN_CANDIDATES, Ranks
from liz.facts.vectors import Vector, rounded

_ROLLBACK = Statement.of("ROLLBACK")
# The rows of a search carry the fact's own columns after (id, similarity, hash, part):
# those of keyword hits, and of the vector candidates near enough the top to be chosen;
# decoding them all cost more than the search itself (48 rows of 1536 dimensions).
_FACT_NAMES = FACT_COLUMN_NAMES.split(", ")
_FACT_ALIASES = "".join(f", {name} AS f{number}" for number, name in enumerate(_FACT_NAMES))
_FACT_KEPT = "".join(f", CASE WHEN kept THEN f{number} END" for number in range(len(_FACT_NAMES)))
_FACT_AT = 4
_FACTS_BY_ID = f'SELECT {FACT_COLUMN_NAMES} FROM "Fact" WHERE id = ANY(:ids)'


async def search_on_postgres(
    engine: AsyncEngine,
    index: PostgresFactIndex,
    scope: Scope,
    query_text: str,
    query_vector: Awaitable[Vector],
    *,
    model: str,
    limit: int,
    threshold: float,
) -> list[Fact]:
    """:func:`liz.facts.search.hybrid_search`, the same results (but where a similarity
    compared here in float32 lands on the other side of its sixth decimal), in one round
    trip for a scope held here (two when its copy is behind), four for a scope searched
    through the graph (one more in the rare case of :func:`_search_sql`); for an asyncpg
    engine.

    ``query_vector`` must be awaitable more than once (a future).
    """
    candidates = max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES)
    terms = keyword_terms(query_text)
    try:
        async with connect(engine) as db:
            await send_vectors_binary(db.connection)
            read = await _read(
                db,
                index,
                scope,
                terms,
                query_vector,
                model=model,
                candidates=candidates,
                threshold=threshold,
                limit=limit,
            )
            if read is None:
                return []
            ranks, reads = read
            chosen = ranks.chosen(limit)
            return ranks.found(chosen, await reads.facts(chosen))
    except Exception as exc:
        # A connection the server dropped can fail as the driver's own error (not a
        # PostgreSQL error, which liz.db.driver turns into SQLAlchemy's): told here.
        outage = storage_error_for(exc)
        if outage is None or isinstance(exc, SQLAlchemyError):
            raise
        raise outage from exc


async def _read(
    db: Driver,
    index: PostgresFactIndex,
    scope: Scope,
    terms: Sequence[str],
    query_vector: Awaitable[Vector],
    *,
    model: str,
    candidates: int,
    threshold: float,
    limit: int,
) -> tuple[Ranks, _SearchReads | _HeldReads] | None:
    """Both rankings, the similarities fusing them needs, and where the chosen facts'
    rows are; None when the scope has no active fact. A transaction it begins, it ends."""
    wanted = candidates + TIE_MARGIN  # as the index's vector_candidates asks
    cap = max(COMMON_WORD_FACTS, candidates)
    began = False  # set before BEGIN is sent: a cancelled BEGIN may still have run
    try:
        # With the model's dimension known from an earlier search, the plan is read
        # (and a large scope's transaction begun, or a small one's facts brought up to
        # date in this process) while the embedding is on its way.
        dimension = index.dimensions.get(model)
        if dimension is None:
            dimension = int((await query_vector).size)
        sent = asyncio.get_running_loop().time()
        plan = await _plan(db, index, scope, terms, cap, wanted, dimension)
        held = None
        if index.uses_graph(plan.active, dimension):
            began = True
            await db.execute(_tuned_begin(wanted))
        elif plan.active and models_agree(plan.bounds, model, dimension):
            pair = (model, dimension)
            held = await index.held.current(db, scope, plan.mark, plan.active, pair, sent)
        vector = await query_vector
        if vector.size != dimension:  # the model's dimension changed: plan again
            dimension = int(vector.size)
            plan = await _plan(db, index, scope, terms, cap, wanted, dimension)
            held = None
        index.dimensions[model] = dimension
        if not models_agree(plan.bounds, model, dimension):
            raise models_mismatch(scope, await _stored_models(db, scope), model, dimension)
        if not plan.active:
            return None
        ranks = Ranks.by_keywords(plan.matches, candidates)
        if held is not None:  # compared here, as SQLite's scopes are
            ranks.add_vector_ranking(
                best_candidates(held.vectors, vector, limit=candidates, threshold=threshold)
            )
            ranks.similarities.update(similarities_in(held.vectors, ranks.missing, vector))
            return ranks, _HeldReads(held)
        if not began and index.uses_graph(plan.active, dimension):  # planned again
            began = True
            await db.execute(_tuned_begin(wanted))
        reads = _SearchReads(db, scope, vector, dimension, wanted, ranks.by_keyword, limit)
        parts = await index.vector_parts(
            reads.search, active=plan.active, dimension=dimension, wanted=wanted
        )
        ranks.add_vector_ranking(nearest(parts, wanted, limit=candidates, threshold=threshold))
        ranks.similarities.update(reads.similarities(ranks.missing))
        return ranks, reads
    finally:
        if began and not db.connection.is_closed():  # a dropped one has nothing to end
            # Ended here, whatever stopped the search: the pool's reset rolls back only
            # what SQLAlchemy began, and the connection must not go back in a transaction.
            await db.execute(_ROLLBACK)


@dataclass(frozen=True)
class _Plan:
    bounds: tuple[ModelPair, ...]
    active: int
    mark: int  # the scope's newest history id (liz.facts.index.pg_cache)
    matches: dict[str, dict[str, str]]


async def _plan(
    db: Driver,
    index: PostgresFactIndex,
    scope: Scope,
    terms: Sequence[str],
    cap: int,
    wanted: int,
    dimension: int,
) -> _Plan:
    """The keyword matches and the plan (bounds, count), in one round trip."""
    values = index.plan_values(scope, wanted, dimension)
    values["most"] = cap + 1
    values.update((f"term{number}", term_value(term)) for number, term in enumerate(terms))
    statement, names = _positional(_plan_sql(len(terms)))
    rows = await db.fetch(statement, *[values[name] for name in names])
    bounds: list[ModelPair] = []
    active = mark = 0
    term_rows = []
    for row in rows:
        if row[0] == -1:
            bounds.append((row[1], int(row[3])))
        elif row[0] == -2:
            active = int(row[3])
        elif row[0] == -3:
            mark = int(row[3])
        else:
            term_rows.append((row[0], row[1], row[2]))
    return _Plan(tuple(bounds), active, mark, terms_found(term_rows, terms, cap) if terms else {})


@functools.lru_cache(maxsize=32)
def _plan_sql(term_count: int) -> str:
    """Rows of (kind, text, text, number): -1 a model bound, -2 the count of active
    facts, -3 the newest history id, a term's number for each of its matches (fact id,
    text)."""
    sql = (
        f'SELECT -1, "embeddingModel", NULL, "embeddingDim"::bigint FROM ({BOUNDS}) AS bounds '
        f"UNION ALL SELECT -2, NULL, NULL, n FROM ({ACTIVE_COUNT}) AS active "
        f"UNION ALL SELECT -3, NULL, NULL, n FROM ({NEWEST_HISTORY}) AS newest"
    )
    if term_count:
        sql += f" UNION ALL SELECT *, NULL FROM ({terms_statement(term_count, ONE_TERM)}) AS terms"
    return sql


class _SearchReads:
    """The vector search with, in the same statement, the keyword hits' similarities,
    and the rows of the facts that can be chosen; what was read, for the fusion after."""

    def __init__(
        self,
        db: Driver,
        scope: Scope,
        vector: Vector,
        dimension: int,
        wanted: int,
        keyword_ids: Sequence[str],
        limit: int,
    ) -> None:
        self._db = db
        self._scope = scope
        self._dimension = dimension
        self._values: dict[str, Any] = {
            "query": vector,  # in pgvector's binary form (liz.facts.pg_vectors)
            "agent": scope[0],
            "user": scope[1],
            "limit": wanted,
            "ids": list(keyword_ids),
            # The fusion chooses vector candidates among the first ``limit`` (or keyword
            # hits, whose columns come anyway); the margin covers ranks that rounding
            # reorders, and a chosen fact without its columns is read after (facts).
            "kept": limit + TIE_MARGIN,
        }
        self._rows: dict[str, Sequence[Any]] = {}
        self._unread: set[str] = set()  # vector candidates read without their columns
        self._by_id: dict[str, float] = {}

    async def search(self, graph: bool) -> tuple[list[Candidate], list[Candidate]]:
        statement, names = _positional(_search_sql(self._dimension, graph))
        rows = await self._db.fetch(statement, *[self._values[name] for name in names])
        for row in rows:
            if row[_FACT_AT] is None:
                self._unread.add(row[0])  # a vector candidate, of the scope
            elif (row[_FACT_AT + 1], row[_FACT_AT + 2]) == self._scope:
                self._rows[row[0]] = row[_FACT_AT:]
                if row[3] is None:
                    self._by_id[row[0]] = rounded(row[1])
        return split_parts(rows)

    def similarities(self, ids: Sequence[str]) -> dict[str, float]:
        """The similarities of these keyword hits (those of the scope, as embedded)."""
        return {fact_id: self._by_id[fact_id] for fact_id in ids if fact_id in self._by_id}

    async def facts(self, ids: Sequence[str]) -> dict[str, Fact]:
        """The facts of the scope with these ids: from the rows read, and (rarely) read
        now for candidates that came without their columns."""
        unread = [
            fact_id for fact_id in ids if fact_id not in self._rows and fact_id in self._unread
        ]
        if unread:
            statement, _ = _positional(_FACTS_BY_ID)
            for row in await self._db.fetch(statement, unread):
                if (row[1], row[2]) == self._scope:
                    self._rows[row[0]] = row
        return {
            fact_id: fact_from_row(self._rows[fact_id]) for fact_id in ids if fact_id in self._rows
        }


class _HeldReads:
    """The chosen facts' rows, from the scope's facts held in this process."""

    def __init__(self, held: ScopeFacts) -> None:
        self._facts = held.facts

    async def facts(self, ids: Sequence[str]) -> dict[str, Fact]:
        return {fact_id: self._facts[fact_id] for fact_id in ids if fact_id in self._facts}


@functools.lru_cache(maxsize=64)
def _search_sql(dimension: int, graph: bool) -> str:
    """The vector search and the keyword hits by id; a vector candidate's columns only
    when it is among the ``:kept`` most similar. Exact ties are cut in any order here
    (ordering them by text hash, as the fusion does, made the sort cost more than the
    columns it saves); a chosen fact the cut left without columns is read after."""
    shape = {"columns": _FACT_ALIASES, "query": QUERY_AS_VECTOR}
    found = (
        f"({vector_search(dimension, graph=graph, **shape)}) "
        f"UNION ALL ({similarities_by_id(dimension, **shape)})"
    )
    nearness = "row_number() OVER (ORDER BY part IS NULL, similarity DESC)"
    return (
        f"SELECT id, similarity, hash, part{_FACT_KEPT} FROM (SELECT *, "
        f"part IS NULL OR {nearness} <= :kept AS kept FROM ({found}) AS found) AS ranked"
    )


def _tuned_begin(wanted: int) -> Statement:
    return Statement.of(TUNED_BEGIN.format(ef=ef_search(wanted)))


async def _stored_models(db: Driver, scope: Scope) -> list[ModelPair]:
    """The scope's distinct (model, dimension) pairs, for the error that names them."""
    statement, names = _positional(DISTINCT_MODELS)
    values = {"agent": scope[0], "user": scope[1]}
    rows = await db.fetch(statement, *[values[name] for name in names])
    return [(row[0], int(row[1])) for row in rows]


# A :name parameter, not a ::cast.
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@functools.lru_cache(maxsize=128)
def _positional(sql: str) -> tuple[Statement, tuple[str, ...]]:
    """``sql`` (shared with the session path, its parameters named ``:name``) with
    asyncpg's ``$n`` instead, and the names in their numbers' order. PostgreSQL only."""
    names: list[str] = []

    def numbered(match: re.Match[str]) -> str:
        if match[1] not in names:
            names.append(match[1])
        return f"${names.index(match[1]) + 1}"

    return Statement(sqlite="", postgres=_NAMED.sub(numbered, sql)), tuple(names)
