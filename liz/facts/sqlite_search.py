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
from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.engine import read_engine
from liz.facts.domain import Fact, Scope
from liz.facts.index.sqlite import SqliteFactIndex, best_candidates, similarities_in
from liz.facts.normalize import fact_hash, keyword_terms
from liz.facts.queries import facts_from_sqlite_rows, read_facts_on_sqlite
from liz.facts.search import (
    CANDIDATE_FACTOR,
    COMMON_WORD_FACTS,
    MIN_CANDIDATES,
    fuse,
    order_keyword_hits,
)
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
        hashes = {
            fact_id: fact_hash(text) for hits in matches.values() for fact_id, text in hits.items()
        }
        by_keyword = order_keyword_hits(matches, hashes)[:candidates]
        hashes.update((fact_id, digest) for fact_id, _, digest in by_vector)
        similarities = {fact_id: similarity for fact_id, similarity, _ in by_vector}
        missing = [fact_id for fact_id in by_keyword if fact_id not in similarities]
        similarities.update(similarities_in(vectors, missing, vector))
        ranked_by_vector = [fact_id for fact_id, _, _ in by_vector]
        chosen = fuse([ranked_by_vector, by_keyword], similarities, hashes, limit=limit)
        if not chosen:
            return []
        rows = await connection.run(lambda db: read_facts_on_sqlite(db, chosen))
    facts = facts_from_sqlite_rows(rows, engine.dialect, scope)
    return [
        replace(facts[fact_id], score=similarities.get(fact_id))
        for fact_id in chosen
        if fact_id in facts and facts[fact_id].retired_at is None
    ]
