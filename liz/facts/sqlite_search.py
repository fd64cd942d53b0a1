"""Hybrid search on SQLite in two hops to a read connection's thread, off any session.

liz.facts.search runs through a SQLAlchemy session: ``BEGIN``, the keyword and
history reads, the facts (if any is chosen), ``ROLLBACK`` — four hops to the
connection's thread and back, each a wake-up of that thread and of the event loop,
and the session's own work around them; a facts-on chat turn pays them all in the
server's one process. Here the first hop reads, in one transaction, the keyword
matches and what the cached vectors are checked against (liz.facts.index.sqlite);
the vectors are ranked on the event loop; the second hop, if any fact is chosen,
reads the chosen facts.

The two hops are two snapshots: a fact retired between them is left out (as any
retired fact is), a fact changed between them comes with its new text.
"""

from __future__ import annotations

from collections.abc import Awaitable

from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.engine import read_engine
from liz.facts.domain import Fact, Scope
from liz.facts.index.sqlite import SqliteFactIndex, best_candidates, similarities_in
from liz.facts.normalize import keyword_terms
from liz.facts.queries import facts_from_sqlite_rows, read_facts_on_sqlite
from liz.facts.search import CANDIDATE_FACTOR, COMMON_WORD_FACTS, MIN_CANDIDATES, Ranks
from liz.facts.sqlite_thread import connected
from liz.facts.vectors import Vector


async def search_on_sqlite(
    engine: AsyncEngine,
    index: SqliteFactIndex,
    scope: Scope,
    query_text: str,
    query_vector: Awaitable[Vector],
    *,
    model: str,
    limit: int,
    threshold: float,
) -> list[Fact]:
    """:func:`liz.facts.search.hybrid_search`, the same results, in two hops; for an
    engine :func:`liz.facts.sqlite_thread.supports`."""
    candidates = max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES)
    terms = keyword_terms(query_text)
    async with connected(read_engine(engine)) as connection:
        matches, vectors, vector = await index.search_reads(
            connection,
            scope,
            terms,
            query_vector,
            cap=max(COMMON_WORD_FACTS, candidates),
            model=model,
        )
        # From here on as hybrid_search ranks, with the vectors at hand.
        by_vector = best_candidates(vectors, vector, limit=candidates, threshold=threshold)
        ranks = Ranks.of(matches, by_vector, candidates)
        ranks.similarities.update(similarities_in(vectors, ranks.missing, vector))
        chosen = ranks.chosen(limit)
        if not chosen:
            return []
        rows = await connection.run(lambda db: read_facts_on_sqlite(db, chosen))
    return ranks.found(chosen, facts_from_sqlite_rows(rows, engine.dialect, scope))
