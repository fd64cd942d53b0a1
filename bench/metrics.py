"""``GET /metrics`` over HTTP: a ``liz serve`` process that has served 10 agents' turns
for 10,000 users, scraped as Prometheus does, beside ``GET /health`` on the same server.

    .venv/bin/python bench/metrics.py                       # 10 agents, 10,000 users
    .venv/bin/python bench/metrics.py --users 2000 --scrapes 300
    .venv/bin/python bench/metrics.py --profile /tmp/metrics.txt   # py-spy the idle scrapes

The scripted LLM in a process of its own, a fresh SQLite database (facts off), one
agent per character file. Every user takes one turn; then the two paths are asked in
turns, one request at a time, with the server idle, then again while new users' turns
keep 16 in flight. Printed: the series, the scrape's size, p50 and p95 of each, and
/metrics to /health (the target: /metrics under 5 ms at p95).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
from benchkit import free_port, markdown_table, p50_p95_ms, py_spy, running
from prometheus_client.parser import text_string_to_metric_families
from scripted_server import scripted_server

from liz.db.migrate import upgrade

IN_FLIGHT = 16


def write_agents(folder: Path, count: int) -> list[str]:
    """``count`` characters in Liz's format, one file each; their ids."""
    folder.mkdir()
    ids = []
    for number in range(count):
        agent_id = f"agent-{number}"
        character = {
            "agentId": agent_id,
            "name": f"Advisor {number}",
            "system": f"You are advisor number {number}; answer in two sentences.",
            "bio": ["Helps small shops with their numbers."],
            "topics": ["pricing", "cash flow"],
        }
        (folder / f"{agent_id}.json").write_text(json.dumps(character))
        ids.append(agent_id)
    return ids


@contextmanager
def liz_server(url: str, llm_url: str, agents: Path, folder: Path) -> Iterator[tuple[str, int]]:
    port = free_port()
    command = [sys.executable, "-m", "liz", "serve", "--no-migrate", "--log-level", "warning"]
    command += ["--agents", str(agents), "--host", "127.0.0.1", "--port", str(port)]
    env = {
        "DATABASE_URL": url,
        "OPENAI_BASE_URL": llm_url,
        "OPENAI_API_KEY": "bench",
        "LIZ_LLM_MAX_RETRIES": "0",
        "LIZ_FACTS_ENABLED": "false",
    }
    base = f"http://127.0.0.1:{port}"
    with running(command, f"{base}/health", folder / "liz.log", env, folder) as process:
        yield base, process.pid


async def send_turn(client: httpx.AsyncClient, agents: list[str], number: int) -> None:
    text = f"how do I price my first order of {number % 50 + 1} boxes?"
    body = {"agentId": agents[number % len(agents)], "userId": f"user-{number}"}
    response = await client.post("/agent/input", json={"input": {**body, "text": text}})
    if response.status_code != 200:
        raise RuntimeError(f"{response.status_code}: {response.text[:300]}")


async def serve_users(base: str, agents: list[str], users: int) -> None:
    """One turn for each user, with the agents in turn, ``IN_FLIGHT`` at once."""
    gate = asyncio.Semaphore(IN_FLIGHT)
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:

        async def turn(number: int) -> None:
            async with gate:
                await send_turn(client, agents, number)

        await asyncio.gather(*(turn(number) for number in range(users)))


async def scrape(base: str, scrapes: int) -> tuple[dict[str, list[float]], str]:
    """``/metrics`` and ``/health`` asked in turns; each one's seconds, and the last scrape."""
    took: dict[str, list[float]] = {"/metrics": [], "/health": []}
    text = ""
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        for number in range(scrapes + 20):
            for path, times in took.items():
                began = time.perf_counter()
                response = await client.get(path)
                elapsed = time.perf_counter() - began
                if response.status_code != 200:
                    raise RuntimeError(f"GET {path}: {response.status_code}")
                if number >= 20:  # the first ones warm the connection and the code up
                    times.append(elapsed)
                if path == "/metrics":
                    text = response.text
    return took, text


async def scrape_under_load(
    base: str, agents: list[str], first_user: int, scrapes: int
) -> dict[str, list[float]]:
    """:func:`scrape` while new users' turns keep ``IN_FLIGHT`` in flight."""
    numbers = itertools.count(first_user)
    stop = asyncio.Event()
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:

        async def keep_sending() -> None:
            while not stop.is_set():
                await send_turn(client, agents, next(numbers))

        senders = [asyncio.create_task(keep_sending()) for _ in range(IN_FLIGHT)]
        try:
            took, _ = await scrape(base, scrapes)
        finally:
            stop.set()
            await asyncio.gather(*senders)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--users", type=int, default=10_000, help="one turn each")
    parser.add_argument("--scrapes", type=int, default=500, help="requests to each path")
    parser.add_argument("--profile", type=Path, help="py-spy profile of the server's scrapes")
    args = parser.parse_args()
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="liz-bench-")))
        llm_url = stack.enter_context(scripted_server(dim=256, log_dir=folder))
        url = f"sqlite+aiosqlite:///{folder / 'metrics.db'}"
        upgrade(url)
        agents = write_agents(folder / "agents", args.agents)
        base, pid = stack.enter_context(liz_server(url, llm_url, folder / "agents", folder))
        began = time.perf_counter()
        asyncio.run(serve_users(base, agents, args.users))
        print(f"{args.users:,} users' turns in {time.perf_counter() - began:.0f} s", flush=True)
        with py_spy(pid, args.profile):
            took, text = asyncio.run(scrape(base, args.scrapes))
        loaded = asyncio.run(scrape_under_load(base, agents, args.users, args.scrapes))
    families = list(text_string_to_metric_families(text))
    samples = sum(len(family.samples) for family in families)
    rows = []
    for when, timed in (("idle", took), (f"{IN_FLIGHT} turns in flight", loaded)):
        (metrics_p50, metrics_p95), (health_p50, health_p95) = (
            p50_p95_ms(timed[path]) for path in ("/metrics", "/health")
        )
        ratio = f"{metrics_p95 / health_p95:.2f}"
        rows.append([f"GET /metrics, {when}", f"{metrics_p50:.2f}", f"{metrics_p95:.2f}", ratio])
        rows.append([f"GET /health, {when}", f"{health_p50:.2f}", f"{health_p95:.2f}", "1.00"])
    print(
        f"\n{args.agents} agents, {args.users:,} users: {len(families)} metrics, "
        f"{samples} samples, {len(text.encode()) / 1024:.0f} KB a scrape; "
        f"{args.scrapes} requests to each path, in turns, over loopback HTTP:\n"
    )
    print(markdown_table(["request", "p50 ms", "p95 ms", "p95 vs /health"], rows))


if __name__ == "__main__":
    main()
