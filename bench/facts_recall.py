"""How often SQLite's two-pass vector search picks other facts than an exact scan.

    .venv/bin/python bench/facts_recall.py                    # 100k facts, 1536 dimensions
    .venv/bin/python bench/facts_recall.py --size 20000 --dims 1536 3072

In a scope past ``EXACT_SCAN_VALUES`` numbers, with vectors of ``MIN_BIT_DIMENSIONS``
or more (liz.facts.sqlite.vectors), a search ranks rows by sign bits first and
scores only the closest exactly. This compares the ``limit + TIE_MARGIN`` best
similarities it finds with an exact scan's, for the facts and queries of
bench/memory.py (bag-of-words vectors from the scripted server) and for dense,
clustered vectors such as real embedding models give. Prints, per data set and
limit, in how many searches the two agree, and the milliseconds of CPU each takes.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from memory import QUERIES, facts

from liz.facts.search import TIE_MARGIN
from liz.facts.sqlite import vectors as sqlite_cache
from liz.facts.sqlite.vectors import ScopeVectors
from liz.facts.vectors import Vector, as_unit_vector
from liz.testing.openai_server import scripted_embedding

LIMITS = (10, 40)  # a search's ten, and the 40 candidates hybrid search asks for


def best(vectors: ScopeVectors, query: Vector, fetch: int) -> tuple[list[float], float]:
    """The ``fetch`` highest similarities found (rounded as searches round them), and
    the CPU seconds it took."""
    began = time.process_time()
    _, similarities = vectors.nearest(query, fetch)
    found = sorted(np.round(similarities, 6).tolist(), reverse=True)[:fetch]
    return found, time.process_time() - began


def compare(name: str, vectors: ScopeVectors, queries: list[Vector]) -> list[str]:
    lines = []
    for limit in LIMITS:
        fetch = limit + TIE_MARGIN
        same, exact_s, two_pass_s = 0, 0.0, 0.0
        for query in queries:
            bits_at = sqlite_cache.EXACT_SCAN_VALUES
            sqlite_cache.EXACT_SCAN_VALUES = 10**15  # every scope scanned whole
            try:
                exact, spent = best(vectors, query, fetch)
            finally:
                sqlite_cache.EXACT_SCAN_VALUES = bits_at
            exact_s += spent
            found, spent = best(vectors, query, fetch)
            two_pass_s += spent
            same += found == exact
        lines.append(
            f"| {name} | {limit} | {same} / {len(queries)} | "
            f"{1000 * exact_s / len(queries):.1f} | {1000 * two_pass_s / len(queries):.1f} |"
        )
    return lines


def clustered(rng: np.random.Generator, centres: Vector, count: int) -> Vector:
    """Unit vectors around random centres, about 0.3 similar within a cluster."""
    picked = centres[rng.integers(0, len(centres), count)]
    noisy = picked + 1.5 * rng.standard_normal(picked.shape).astype(np.float32)
    return noisy / np.linalg.norm(noisy, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--dims", type=int, nargs="+", default=[1536])
    parser.add_argument("--queries", type=int, default=300, help="beside bench/memory.py's")
    args = parser.parse_args()
    texts = facts(args.size + args.queries)
    lines = [
        "| vectors | limit | same top as exact | exact ms | two-pass ms |",
        "|---|---|---|---|---|",
    ]
    for dim in args.dims:
        matrix = np.array([scripted_embedding(t, dim) for t in texts[: args.size]], np.float32)
        ids = [str(number) for number in range(args.size)]
        scope = ScopeVectors(ids, [f"{number:08d}" for number in range(args.size)], matrix, ())
        # Bench queries as people write them, and facts not in the scope (as learning asks).
        asked = [*QUERIES, *texts[args.size :]]
        queries = [as_unit_vector(scripted_embedding(q, dim)) for q in asked]
        lines += compare(f"bench/memory.py facts, {dim} dims", scope, queries)
        rng = np.random.default_rng(1)
        centres = rng.standard_normal((200, dim)).astype(np.float32)
        scope = ScopeVectors(ids, scope.hashes, clustered(rng, centres, args.size), ())
        queries = list(clustered(rng, centres, args.queries))
        lines += compare(f"dense clustered, {dim} dims", scope, queries)
        print("\n".join(lines[-2 * len(LIMITS) :]), flush=True)
    print(f"\n{args.size:,} facts; searches that found the same top similarities:\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
