"""Hybrid search: vector similarity and keyword match, fused by reciprocal rank.

An exact name or number ("Zanzibar", "4711") can sit far from the query in
embedding space; the keyword list still ranks it, so the fusion finds it.

Only rare words make keyword hits: a word in more than ``COMMON_WORD_FACTS`` of
the user's facts (every fact starts "User"; "User's" holds "s") singles none of
them out, so it is skipped, as its low inverse document frequency says; its
meaning still reaches the vector search. Each word costs at most that many rows,
so keyword search costs the same in a scope of a hundred facts or a million.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, replace

from sqlalchemy.ext.asyncio import AsyncSession

from liz.facts.domain import Fact, Scope
from liz.facts.index.protocol import Candidate, FactIndex
from liz.facts.normalize import fact_hash, keyword_terms
from liz.facts.queries import facts_by_id
from liz.facts.vectors import Vector

# Each list offers this many times `limit` candidates to the fusion.
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 20
# The usual constant: it damps the weight of the very first ranks.
RRF_K = 60
# A query word in more of the scope's facts than this (or than the candidates asked
# for, if more) is too common to make keyword hits.
COMMON_WORD_FACTS = 100


async def hybrid_search(
    session: AsyncSession,
    index: FactIndex,
    scope: Scope,
    query_text: str,
    query_vector: Awaitable[Vector],
    *,
    model: str,
    limit: int,
    threshold: float,
) -> list[Fact]:
    """The scope's best active facts for a query, best first, each with its similarity.

    Vector hits count only at or above ``threshold``; keyword hits count whatever
    their similarity (that is their point). The keywords are looked up while
    ``query_vector`` (the query's embedding, usually a round trip away) is awaited.
    """
    candidates = max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES)
    terms = keyword_terms(query_text)
    matches = await index.term_matches(
        session, scope, terms, cap=max(COMMON_WORD_FACTS, candidates)
    )
    # A future, awaited here and by the index (which may read the scope's size first).
    on_its_way = asyncio.ensure_future(query_vector)
    by_vector = await index.vector_candidates(
        session, scope, on_its_way, model=model, limit=candidates, threshold=threshold
    )
    vector = await on_its_way
    ranks = Ranks.of(matches, by_vector, candidates)
    if ranks.missing:
        ranks.similarities.update(
            await index.similarities(session, scope, ranks.missing, vector, model=model)
        )
    chosen = ranks.chosen(limit)
    return ranks.found(chosen, await facts_by_id(session, scope, chosen))


@dataclass
class Ranks:
    """The two rankings of a search's candidates, and what fusing them needs."""

    by_vector: list[str]
    by_keyword: list[str]
    similarities: dict[str, float]  # the keyword hits' too, once ``missing`` is filled in
    hashes: dict[str, str]

    @classmethod
    def of(
        cls,
        matches: Mapping[str, Mapping[str, str]],
        by_vector: Sequence[Candidate],
        candidates: int,
    ) -> Ranks:
        ranks = cls.by_keywords(matches, candidates)
        ranks.add_vector_ranking(by_vector)
        return ranks

    @classmethod
    def by_keywords(cls, matches: Mapping[str, Mapping[str, str]], candidates: int) -> Ranks:
        """The keyword ranking alone, known before the query's embedding is."""
        hashes = {
            fact_id: fact_hash(text) for hits in matches.values() for fact_id, text in hits.items()
        }
        return cls([], order_keyword_hits(matches, hashes)[:candidates], {}, hashes)

    def add_vector_ranking(self, by_vector: Sequence[Candidate]) -> None:
        self.by_vector = [fact_id for fact_id, _, _ in by_vector]
        self.hashes.update((fact_id, digest) for fact_id, _, digest in by_vector)
        self.similarities.update((fact_id, similarity) for fact_id, similarity, _ in by_vector)

    @property
    def missing(self) -> list[str]:
        """Keyword hits whose similarity to the query is still to be computed."""
        return [fact_id for fact_id in self.by_keyword if fact_id not in self.similarities]

    def chosen(self, limit: int) -> list[str]:
        return fuse([self.by_vector, self.by_keyword], self.similarities, self.hashes, limit=limit)

    def found(self, chosen: Sequence[str], facts: Mapping[str, Fact]) -> list[Fact]:
        """The chosen facts still active, best first, each with its similarity."""
        return [
            replace(facts[fact_id], score=self.similarities.get(fact_id))
            for fact_id in chosen
            if fact_id in facts and facts[fact_id].retired_at is None
        ]


def fuse(
    rankings: Sequence[Sequence[str]],
    similarities: Mapping[str, float],
    hashes: Mapping[str, str],
    *,
    limit: int,
) -> list[str]:
    """Ids ordered by summed ``1 / (RRF_K + rank)``; ties by similarity, then text hash.

    The tie-breaks keep the order the same on every database for the same data.
    """
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, fact_id in enumerate(ranking, start=1):
            scores[fact_id] = scores.get(fact_id, 0.0) + 1.0 / (RRF_K + rank)
    ordered = sorted(
        scores,
        key=lambda fact_id: (
            -round(scores[fact_id], 9),
            -similarities.get(fact_id, -1.0),
            hashes.get(fact_id, fact_id),
        ),
    )
    return ordered[:limit]


def order_keyword_hits(
    matches: Mapping[str, Mapping[str, str]], hashes: Mapping[str, str]
) -> list[str]:
    """Facts matching any of the (rare) words: by how many of them each holds, then
    shorter text, then hash.

    Both databases find the same matching facts; ranking them here, not by
    FTS5's bm25 or PostgreSQL's ts_rank, keeps the order the same on both.
    """
    counts: dict[str, int] = {}
    texts: dict[str, str] = {}
    for hits in matches.values():
        for fact_id, text in hits.items():
            counts[fact_id] = counts.get(fact_id, 0) + 1
            texts[fact_id] = text
    return sorted(
        counts, key=lambda fact_id: (-counts[fact_id], len(texts[fact_id]), hashes[fact_id])
    )
