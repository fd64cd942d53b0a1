"""liz's facts store against mem0, side by side: store one fact without an LLM, and search.

    .venv/bin/python bench/memory.py                                   # the full run
    .venv/bin/python bench/memory.py --sizes 1000 --dims 256 --databases sqlite   # quick
    .venv/bin/python bench/memory.py --mem0-venv /tmp/mem0-venv       # keep mem0's venv

Both use the same scripted OpenAI-compatible server over loopback, the same facts
(bench/memory_facts.py) and queries, in one user's scope; mem0 runs in a throwaway venv
with its default local vector store and ``infer=False``. Fills are untimed; "store" is
one fact added without an LLM, "search" the ten best facts for a query.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import os
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import numpy as np
from benchkit import (
    markdown_table,
    mem0_process,
    mem0_venv,
    new_postgres_database,
    p50_p95_ms,
    postgres_server,
)
from memory_facts import QUERIES, facts
from openai import AsyncOpenAI
from pydantic_settings import BaseSettings
from scripted_server import scripted_server
from sqlalchemy import text

from liz.config import Settings
from liz.db.engine import create_engine, make_sessionmaker
from liz.db.migrate import upgrade
from liz.llm import LLMClient
from liz.testing.openai_server import scripted_embedding

BENCH = Path(__file__).resolve().parent
AGENT, USER = "bench-agent", "bench-user"
SEED_BATCH = 2000
STORES = 50  # measured stores per size
SEARCHES = 100  # measured searches per size (fewer when one system is slow, see budget)
SEARCH_BUDGET_S = 10.0


def fact_store_classes() -> tuple[type[Any], type[BaseSettings]]:
    """liz's facts store and its settings: ``liz.facts`` (FactStore), else ``liz.memory``."""
    for package, store_names in (("liz.facts", ("FactStore",)), ("liz.memory", ("MemoryStore",))):
        try:
            modules = [importlib.import_module(package)]
            for name in ("store", "settings"):
                with suppress(ImportError):
                    modules.append(importlib.import_module(f"{package}.{name}"))
        except ImportError:
            continue
        store = next((getattr(m, n) for m in modules for n in store_names if hasattr(m, n)), None)
        settings = next(
            (
                value
                for module in modules
                for value in vars(module).values()
                if isinstance(value, type)
                and issubclass(value, BaseSettings)
                and value.__module__.startswith(package)
            ),
            None,
        )
        if store is not None and settings is not None:
            return store, settings
    raise SystemExit("found neither liz.facts.FactStore nor liz.memory.store.MemoryStore")


def open_fact_store(sessions: Any, llm: LLMClient, engine: Any) -> Any:
    store_class, settings_class = fact_store_classes()
    settings = settings_class(_env_file=None)
    accepted = inspect.signature(store_class).parameters
    options = {"engine": engine, "settings": settings}
    return store_class(sessions, llm, **{k: v for k, v in options.items() if k in accepted})


class PrecomputedEmbeddings(LLMClient):
    """For seeding only: the scripted server's vectors, computed here once for both systems."""

    vectors: dict[str, np.ndarray]

    async def embed_float32(self, texts: Sequence[str]) -> list[np.ndarray]:
        return [self.vectors[text] for text in texts]


def llm_client(base_url: str, cls: type[LLMClient] = LLMClient) -> LLMClient:
    openai = AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0)
    return cls(
        openai,
        small_model="scripted-small",
        large_model="scripted-large",
        embedding_model="scripted-embedding",
    )


def measured_client(base_url: str) -> LLMClient:
    """liz's client as a user's settings make it, over the SDK's aiohttp transport
    (liz.llm.endpoint); mem0 makes its own, over the SDK's default transport."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        openai_base_url=base_url,
        liz_llm_max_retries=0,
        liz_small_model="scripted-small",
        liz_large_model="scripted-large",
        liz_embedding_model="scripted-embedding",
    )
    client = LLMClient.from_settings(settings)
    assert client is not None
    return client


def timed_seconds(samples: list[float]) -> str:
    p50, p95 = p50_p95_ms(samples)
    return f"{p50:.1f} / {p95:.1f}"


async def run_liz(
    url: str, base_url: str, texts: list[str], vectors: np.ndarray, sizes: list[int]
) -> dict[int, tuple[list[float], list[float]]]:
    engine = create_engine(url)
    sessions = make_sessionmaker(engine)
    seeding = llm_client(base_url, PrecomputedEmbeddings)
    assert isinstance(seeding, PrecomputedEmbeddings)
    measured = measured_client(base_url)
    found = {}
    try:
        filler = open_fact_store(sessions, seeding, engine)
        store = open_fact_store(sessions, measured, engine)
        stored = 0
        extra = iter(texts[max(sizes) :])
        for size in sizes:
            while stored < size:
                end = min(size, stored + SEED_BATCH)
                seeding.vectors = {t: vectors[i] for i, t in enumerate(texts[stored:end], stored)}
                batch = [
                    {"op": "add", "text": t, "categories": ["bench", "seed"]}
                    for t in texts[stored:end]
                ]
                await filler.apply(batch, AGENT, USER)
                stored = end
            await settle(engine)
            queries = [QUERIES[i % len(QUERIES)] for i in range(SEARCHES)]
            await store.search(queries[0], AGENT, USER, limit=10)  # warm: load what search keeps
            searches: list[float] = []
            deadline = time.monotonic() + SEARCH_BUDGET_S
            for query in queries:
                began = time.perf_counter()
                await store.search(query, AGENT, USER, limit=10)
                searches.append(time.perf_counter() - began)
                if len(searches) >= 10 and time.monotonic() > deadline:
                    break
            stores: list[float] = []
            for _ in range(STORES):
                operation = [{"op": "add", "text": next(extra), "categories": ["bench", "new"]}]
                began = time.perf_counter()
                await store.apply(operation, AGENT, USER)
                stores.append(time.perf_counter() - began)
            found[size] = (stores, searches)
    finally:
        await measured.close()
        await seeding.close()
        await engine.dispose()
    return found


async def settle(engine: Any) -> None:
    """What a database that grew the usual way, over days, has done by the time it is
    timed: the fill's pages written to disk (on PostgreSQL a checkpoint first; then the
    OS's write-back, as mem0_driver does after its fill), so the stores' syncs do not
    wait behind the fill's vectors. On PostgreSQL
    also what autovacuum does within a minute of a bulk load: statistics for the
    planner and the visibility map for index-only scans; without them the planner
    reads whole scopes for lookups by text hash or word.
    """
    if engine.dialect.name == "postgresql":
        async with engine.connect() as connection:
            autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
            await autocommit.execute(text('VACUUM ANALYZE "Fact", "FactHistory"'))
            await autocommit.execute(text("CHECKPOINT"))
    os.sync()


def run_mem0(
    venv: Path, folder: Path, base_url: str, texts_path: Path, vectors_path: Path, dim: int,
    texts: list[str], sizes: list[int],
) -> tuple[str, dict[int, tuple[list[float], list[float]]]]:  # fmt: skip
    found = {}
    with mem0_process(venv, folder) as ask:
        version = ask(op="open", base_url=base_url, dim=dim, folder=str(folder))["version"]
        extra = iter(texts[max(sizes) :])
        for size in sizes:
            seeded = ask(op="seed", texts=str(texts_path), vectors=str(vectors_path), count=size)
            if not seeded["unsynced"]:
                print("  (mem0: Qdrant local's file not found; seeding synced, slowly)", flush=True)
            queries = [QUERIES[i % len(QUERIES)] for i in range(SEARCHES)]
            ask(op="search", queries=queries[:1], budget=0)  # warm
            searches = ask(op="search", queries=queries, budget=SEARCH_BUDGET_S)["seconds"]
            stores = ask(op="store", texts=[next(extra) for _ in range(STORES)])["seconds"]
            found[size] = (stores, searches)
    return version, found


def embeddings(texts: list[str], dim: int, path: Path) -> np.ndarray:
    vectors = np.array([scripted_embedding(text, dim) for text in texts], dtype=np.float32)
    np.save(path, vectors)
    return vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--dims", type=int, nargs="+", default=[256, 1536])
    parser.add_argument("--databases", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--no-mem0", action="store_true", help="time liz only")
    parser.add_argument("--mem0-venv", type=Path, help="reuse (or keep) mem0's venv here")
    args = parser.parse_args()
    sizes = sorted(args.sizes)
    texts = facts(max(sizes) + 2 * STORES * len(sizes))
    tables = []
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="liz-bench-facts-")))
        venv = None if args.no_mem0 else mem0_venv(folder, args.mem0_venv)
        pg = None
        if "postgres" in args.databases:
            pg = stack.enter_context(postgres_server(folder / "pg"))
        for dim in args.dims:
            server = ExitStack()  # one scripted server per dimension, stopped after it
            stack.enter_context(server)
            base_url = server.enter_context(scripted_server(dim=dim, log_dir=folder))
            print(f"dimension {dim}: embedding {len(texts):,} facts once, for both", flush=True)
            vectors_path = folder / f"vectors-{dim}.npy"
            vectors = embeddings(texts, dim, vectors_path)
            texts_path = folder / "facts.json"
            texts_path.write_text(json.dumps(texts))
            rows: list[list[str]] = []
            if venv is not None:
                print(f"  mem0: filling to {sizes} and timing ({clock()})", flush=True)
                work = folder / f"mem0-{dim}"
                work.mkdir()
                version, found = run_mem0(
                    venv, work, base_url, texts_path, vectors_path, dim, texts, sizes
                )
                rows.append([f"mem0 {version} (Qdrant local)", *cells(found, sizes)])
            for kind in args.databases:
                print(f"  liz on {kind}: filling to {sizes} and timing ({clock()})", flush=True)
                if kind == "sqlite":
                    url = f"sqlite+aiosqlite:///{folder / f'facts-{dim}.db'}"
                else:
                    url = new_postgres_database(pg, f"facts_{dim}")
                upgrade(url)
                found = asyncio.run(run_liz(url, base_url, texts, vectors, sizes))
                rows.append([f"liz ({kind})", *cells(found, sizes)])
            header = ["", *(f"store @{s // 1000}k" for s in sizes)]
            header += [f"search @{s // 1000}k" for s in sizes]
            tables.append(f"Dimension {dim}, p50 / p95 ms:\n\n" + markdown_table(header, rows))
            print(tables[-1], flush=True)
    print(f"\nFacts store against mem0, one user's scope ({time.strftime('%Y-%m-%d')}):\n")
    print("\n\n".join(tables))


def clock() -> str:
    return time.strftime("%H:%M:%S")


def cells(found: dict[int, tuple[list[float], list[float]]], sizes: list[int]) -> list[str]:
    return [timed_seconds(found[s][0]) for s in sizes] + [timed_seconds(found[s][1]) for s in sizes]


if __name__ == "__main__":
    main()
