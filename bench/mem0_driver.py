"""Drives mem0 for bench/memory.py and bench/learning_cost.py, inside the throwaway venv
that holds mem0ai.

One JSON request per stdin line, one JSON answer per stdout line:

    {"op": "open", "base_url": ..., "dim": 256, "folder": ...}
    {"op": "seed", "texts": "facts.json", "vectors": "vectors.npy", "count": 10000}
    {"op": "store", "texts": [...]}       -> {"seconds": [...]}  (add, infer=False)
    {"op": "search", "queries": [...], "budget": 20}  -> {"seconds": [...], "top": [...]}
    {"op": "learn", "turns": [[user, said, reply], ...]}  -> {"memories": {user: [...]}}

mem0 runs with its embedded default vector store (Qdrant, local) and its OpenAI
embedder pointed at the scripted server; telemetry is off (MEM0_TELEMETRY=False).
"learn" adds each turn's exchange with ``infer=True``, as mem0's docs show, one add per
turn, then lists every user's memories. Seeding writes the vector store in batches, as
mem0's own add would one by one (same payload), so only the measured operations go
through ``Memory.add``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from typing import Any

os.environ["MEM0_TELEMETRY"] = "False"

USER = "bench-user"
SEED_BATCH = 1000


class Driver:
    def __init__(self) -> None:
        self.memory: Any = None
        self.seeded = 0

    def open(self, base_url: str, dim: int, folder: str) -> dict[str, Any]:
        from mem0 import Memory

        common = {"api_key": "bench", "openai_base_url": base_url}
        config = {
            "llm": {"provider": "openai", "config": {"model": "scripted-small", **common}},
            "embedder": {
                "provider": "openai",
                "config": {"model": "scripted-embedding", "embedding_dims": dim, **common},
            },
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "bench",
                    "embedding_model_dims": dim,
                    "path": os.path.join(folder, "qdrant"),
                },
            },
            "history_db_path": os.path.join(folder, "history.db"),
        }
        self.memory = Memory.from_config(config)
        self.seeded = 0
        import mem0

        return {"version": getattr(mem0, "__version__", "?")}

    def seed(self, texts_path: str, vectors_path: str, count: int) -> dict[str, Any]:
        import numpy as np
        from mem0.utils.lemmatization import lemmatize_for_bm25

        with open(texts_path) as handle:
            texts = json.load(handle)
        vectors = np.load(vectors_path, mmap_mode="r")
        # Qdrant local commits (and syncs) its SQLite file once per point: fine for one
        # add, hours for 100k. Seeding alone runs unsynced; measured adds run as shipped.
        disk = self._point_storage()
        if disk is not None:
            disk.execute("PRAGMA synchronous=OFF")
        try:
            self._insert(texts, vectors, count, lemmatize_for_bm25)
        finally:
            if disk is not None:
                disk.execute("PRAGMA synchronous=FULL")
        os.sync()  # the fill's pages on disk before the timing, as liz's (memory.py's settle)
        return {"seeded": self.seeded, "unsynced": disk is not None}

    def _point_storage(self) -> Any:
        local = getattr(self.memory.vector_store.client, "_client", None)
        collection = getattr(local, "collections", {}).get("bench")
        persistence = getattr(collection, "storage", None)
        return getattr(persistence, "storage", None)

    def _insert(self, texts: list[str], vectors: Any, count: int, lemmatize: Any) -> None:
        while self.seeded < count:
            end = min(count, self.seeded + SEED_BATCH)
            payloads, ids = [], []
            for text in texts[self.seeded : end]:
                now = datetime.now(UTC).isoformat()
                payloads.append(
                    {
                        "user_id": USER,
                        "role": "user",
                        "data": text,
                        "hash": hashlib.md5(text.encode()).hexdigest(),
                        "created_at": now,
                        "updated_at": now,
                        "text_lemmatized": lemmatize(text),
                    }
                )
                ids.append(str(uuid.uuid4()))
            batch = [row.tolist() for row in vectors[self.seeded : end]]
            self.memory.vector_store.insert(vectors=batch, ids=ids, payloads=payloads)
            self.seeded = end

    def store(self, texts: list[str]) -> dict[str, Any]:
        seconds = []
        for text in texts:
            began = time.perf_counter()
            self.memory.add(text, user_id=USER, infer=False)
            seconds.append(time.perf_counter() - began)
        return {"seconds": seconds}

    def learn(self, turns: list[list[str]]) -> dict[str, Any]:
        for user, said, reply in turns:
            exchange = [{"role": "user", "content": said}, {"role": "assistant", "content": reply}]
            self.memory.add(exchange, user_id=user, infer=True)
        memories = {}
        for user in sorted({user for user, _, _ in turns}):
            found = self.memory.get_all(filters={"user_id": user}, top_k=100)
            listed = found.get("results", found) if isinstance(found, dict) else found
            memories[user] = sorted(item["memory"] for item in listed)
        return {"memories": memories}

    def search(self, queries: list[str], budget: float) -> dict[str, Any]:
        seconds: list[float] = []
        top = []
        deadline = time.monotonic() + budget
        for query in queries:
            began = time.perf_counter()
            found = self.memory.search(query, top_k=10, filters={"user_id": USER})
            seconds.append(time.perf_counter() - began)
            results = found.get("results", found) if isinstance(found, dict) else found
            top.append(results[0]["memory"] if results else None)
            if len(seconds) >= 10 and time.monotonic() > deadline:
                break
        return {"seconds": seconds, "top": top}


def main() -> None:
    driver = Driver()
    for line in sys.stdin:
        request = json.loads(line)
        op = request.pop("op")
        if op == "quit":
            break
        try:
            if op == "open":
                answer = driver.open(request["base_url"], request["dim"], request["folder"])
            elif op == "seed":
                answer = driver.seed(request["texts"], request["vectors"], request["count"])
            elif op == "store":
                answer = driver.store(request["texts"])
            elif op == "learn":
                answer = driver.learn(request["turns"])
            elif op == "search":
                answer = driver.search(request["queries"], request.get("budget", 20.0))
            else:
                answer = {"error": f"unknown op {op!r}"}
        except Exception as exc:  # report to the bench, which stops with it
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
