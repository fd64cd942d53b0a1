"""Hybrid search: vector similarity and keyword match, fused by reciprocal rank.

An exact name or number ("Zanzibar", "4711") can sit far from the query in
embedding space; the keyword list still ranks it, so the fusion finds it.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from liz.memory.fusion import fuse, order_keyword_hits
from liz.memory.index_base import FactIndex, Scope
from liz.memory.normalize import fact_hash, keyword_terms
from liz.memory.queries import records_by_id, to_fact
from liz.memory.types import Fact
from liz.memory.vectors import Vector

# Each list offers this many times `limit` candidates to the fusion.
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 20


async def hybrid_search(
    session: AsyncSession,
    index: FactIndex,
    scope: Scope,
    query_text: str,
    query_vector: Vector,
    *,
    model: str,
    limit: int,
    threshold: float,
) -> list[Fact]:
    """The scope's best active facts for a query, best first, each with its similarity.

    Vector hits count only at or above ``threshold``; keyword hits count whatever
    their similarity (that is their point).
    """
    candidates = max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES)
    by_vector = await index.vector_candidates(
        session, scope, query_vector, model=model, limit=candidates, threshold=threshold
    )
    terms = keyword_terms(query_text)
    hits = await index.keyword_candidates(session, scope, terms, limit=candidates)
    word_sets = {fact_id: set(keyword_terms(text, limit=1000)) for fact_id, text in hits.items()}
    hashes = {fact_id: fact_hash(text) for fact_id, text in hits.items()}
    hashes.update((fact_id, digest) for fact_id, _, digest in by_vector)
    by_keyword = order_keyword_hits(hits, terms, word_sets, hashes)
    similarities = {fact_id: similarity for fact_id, similarity, _ in by_vector}
    missing = [fact_id for fact_id in by_keyword if fact_id not in similarities]
    if missing:
        similarities.update(
            await index.similarities(session, scope, missing, query_vector, model=model)
        )
    ranked_by_vector = [fact_id for fact_id, _, _ in by_vector]
    chosen = fuse([ranked_by_vector, by_keyword], similarities, hashes, limit=limit)
    records = await records_by_id(session, scope, chosen)
    return [
        to_fact(records[fact_id], score=similarities.get(fact_id))
        for fact_id in chosen
        if fact_id in records and records[fact_id].retired_at is None
    ]
