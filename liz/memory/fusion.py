"""Reciprocal rank fusion: one ranking from the vector list and the keyword list."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# The usual constant: it damps the weight of the very first ranks.
RRF_K = 60


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
    hits: Mapping[str, str],
    terms: Sequence[str],
    word_sets: Mapping[str, set[str]],
    hashes: Mapping[str, str],
) -> list[str]:
    """Keyword hits by how many query terms each contains, then shorter text, then hash.

    Both databases find the same matching facts; ranking them here, not by
    FTS5's bm25 or PostgreSQL's ts_rank, keeps the order the same on both.
    """
    wanted = set(terms)
    return sorted(
        hits,
        key=lambda fact_id: (
            -len(wanted & word_sets[fact_id]),
            len(hits[fact_id]),
            hashes[fact_id],
        ),
    )
