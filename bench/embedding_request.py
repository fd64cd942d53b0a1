"""What one embeddings request costs the process that sends it, three ways side by side.

    .venv/bin/python bench/embedding_request.py                 # 8 rounds of 250 each way
    .venv/bin/python bench/embedding_request.py --rounds 2 --requests 100   # quick

Every way sends the same request (one query, base64 answer) to the scripted server,
in a process of its own over loopback, one request at a time:

- liz: ``LLMClient.embed_float32``, as a search or a store asks (the SDK's ``post``
  over its aiohttp transport, the answer read by liz.llm.calls);
- the openai SDK's ``embeddings.create`` as shipped (its default transport), as mem0
  and the pipeline bench's round trip send it;
- aiohttp alone: the HTTP request and nothing else, the least any client pays.

Printed: this process's CPU time a request and the wall time (each the median of
the rounds; the ways take turns in every round, so a change in the machine's speed
falls on all alike), and each as a ratio to aiohttp alone. With facts on, a chat turn
makes one such request and a store without an LLM one as well, so the difference
between the first row and the last is what the SDK's layers cost each of them.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

import aiohttp
from benchkit import markdown_table
from memory import QUERIES, measured_client
from openai import AsyncOpenAI
from scripted_server import scripted_server

Way = Callable[[], Awaitable[object]]


async def measure(base_url: str, rounds: int, requests: int) -> list[list[str]]:
    query = QUERIES[0]
    body = {"model": "scripted-embedding", "input": [query], "encoding_format": "base64"}
    liz = measured_client(base_url)
    sdk = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    session = aiohttp.ClientSession()

    async def by_aiohttp() -> bytes:
        headers = {"Authorization": "Bearer bench"}
        async with session.post(f"{base_url}/embeddings", json=body, headers=headers) as answer:
            answer.raise_for_status()
            return await answer.read()

    ways: dict[str, Way] = {
        "liz (LLMClient.embed_float32)": lambda: liz.embed_float32([query]),
        "openai SDK, embeddings.create": lambda: sdk.embeddings.create(
            model="scripted-embedding", input=[query], encoding_format="base64"
        ),
        "aiohttp alone": by_aiohttp,
    }
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    wall: dict[str, list[float]] = {name: [] for name in ways}
    try:
        for way in ways.values():  # connections open, code paths warm
            for _ in range(50):
                await way()
        for _ in range(rounds):
            for name, way in ways.items():
                began_cpu, began = time.process_time(), time.perf_counter()
                for _ in range(requests):
                    await way()
                cpu[name].append((time.process_time() - began_cpu) * 1000 / requests)
                wall[name].append((time.perf_counter() - began) * 1000 / requests)
    finally:
        await session.close()
        await sdk.close()
        await liz.close()
    least_cpu = statistics.median(cpu["aiohttp alone"])
    least_wall = statistics.median(wall["aiohttp alone"])
    rows = []
    for name in ways:
        mid_cpu, mid_wall = statistics.median(cpu[name]), statistics.median(wall[name])
        rows.append(
            [
                name,
                f"{mid_cpu:.2f} ({mid_cpu / least_cpu:.1f}x)",
                f"{mid_wall:.2f} ({mid_wall / least_wall:.1f}x)",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--requests", type=int, default=250, help="each way, each round")
    parser.add_argument("--dim", type=int, default=256)
    args = parser.parse_args()
    with scripted_server(dim=args.dim) as base_url:
        rows = asyncio.run(measure(base_url, args.rounds, args.requests))
    print(
        f"One embeddings request of one query ({args.dim} dimensions), one at a time, "
        f"ratios to aiohttp alone, {time.strftime('%Y-%m-%d %H:%M')}:\n"
    )
    header = ["sent by", "CPU ms a request", "wall ms a request"]
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()
