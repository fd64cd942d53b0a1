"""Hybrid search: vector similarity and keyword match, fused by reciprocal rank.

An exact name or number ("Zanzibar", "4711") can sit far from the query in
embedding space; the keyword list still ranks it. A word in more than
``COMMON_WORD_FACTS`` of the user's facts singles none out and is skipped, so
keyword search costs the same in a scope of a hundred facts or a million.
Ties break by similarity, then text hash, so every database ranks alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from liz.facts.domain import Candidate, Fact
from liz.facts.normalize import fact_hash

# Each list offers this many times `limit` candidates to the fusion.
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 20
RRF_K = 60  # the usual constant: it damps the weight of the very first ranks
# A query word in more of the scope's facts than this (or than the candidates asked
# for, if more) is too common to make keyword hits.
COMMON_WORD_FACTS = 100
# Rows fetched past the limit, to see whether the limit cuts through a group of ties.
TIE_MARGIN = 8


def candidates_for(limit: int) -> int:
    """How many candidates each ranking offers the fusion for ``limit`` results."""
    return max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES)


def deterministic_top(found: Iterable[Candidate], limit: int, exhausted: bool) -> list[Candidate]:
    """The best ``limit`` of the ``limit + TIE_MARGIN`` most similar facts, the same on
    every database.

    Exactly equal similarities come back in no set order, so when the limit cuts
    through such a group that may go on past what was fetched (not ``exhausted``),
    the group is left out: a shorter result, but never one that depends on which
    tied fact an index visited first.
    """
    ranked = sorted(found, key=lambda candidate: (-candidate[1], candidate[2]))
    if len(ranked) <= limit:
        return ranked
    boundary = ranked[limit - 1][1]
    if exhausted or ranked[-1][1] < boundary:
        return ranked[:limit]
    return [candidate for candidate in ranked if candidate[1] > boundary]


@dataclass
class Ranks:
    """The two rankings of a search's candidates, and what fusing them needs."""

    by_vector: list[str]
    by_keyword: list[str]
    similarities: dict[str, float]  # the keyword hits' too, once ``missing`` is filled in
    hashes: dict[str, str]

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
