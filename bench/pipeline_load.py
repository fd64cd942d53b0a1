"""The load ``bench/pipeline.py`` sends: turns to one server's processes, and the CPU
time the servers (and PostgreSQL) spent on them."""

from __future__ import annotations

import asyncio
import os
import time
from contextlib import suppress
from pathlib import Path

import httpx

AGENT, USER = "business-advisor", "bench-user"
IN_FLIGHT = 16
QUESTIONS = (
    "what should I cook for my sister tonight?",
    "how do I price my first consulting gig?",
    "is it a good week to ask my manager for a raise?",
    "my cousin wants to open a bakery in Lisbon, any advice?",
    "should I hire a freelancer or do the website myself?",
)


class Load:
    """Sends turns to one server's processes (alternating) over one HTTP client."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.sent = 0
        self.one_at_a_time: list[float] = []
        self.loaded: list[float] = []
        self.loaded_seconds = 0.0
        self.loaded_cpu = 0.0  # the servers' CPU seconds while loaded
        self.after_cpu = 0.0  # and once the load stopped, until they were idle again
        self.failed: list[str] = []  # the answers that were not 200

    async def send(self, client: httpx.AsyncClient) -> float:
        number = self.sent
        self.sent += 1
        body = {
            "input": {
                "agentId": AGENT,
                "userId": USER,
                "text": f"{QUESTIONS[number % len(QUESTIONS)]} ({number})",
                "type": "text",
            }
        }
        url = f"{self.urls[number % len(self.urls)]}/agent/input"
        began = time.perf_counter()
        try:
            response = await client.post(url, json=body)
        except (httpx.ReadError, httpx.RemoteProtocolError):
            # The server closed an idle keep-alive connection as it was reused: again.
            began = time.perf_counter()
            response = await client.post(url, json=body)
        took = time.perf_counter() - began
        if response.status_code != 200:
            # A rare failure (17afadf's deadlocks on PostgreSQL) is counted and printed;
            # more than one turn in a hundred ends the run.
            self.failed.append(f"{response.status_code} from {url}: {response.text[:300]}")
            if len(self.failed) > max(1, self.sent // 100):
                raise RuntimeError(self.failed[-1])
        return took

    async def sequential(self, client: httpx.AsyncClient, count: int) -> None:
        for _ in range(count):
            self.one_at_a_time.append(await self.send(client))

    async def concurrent(self, client: httpx.AsyncClient, count: int) -> None:
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def gated() -> float:
            async with gate:
                return await self.send(client)

        began = time.perf_counter()
        self.loaded += await asyncio.gather(*(gated() for _ in range(count)))
        self.loaded_seconds += time.perf_counter() - began


def _ticks(pid: int, children_gone: bool = False) -> int:
    """A process's CPU time in clock ticks (utime + stime), and with ``children_gone``
    its ended children's (cutime + cstime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(field) for field in fields[11 : 15 if children_gone else 13])


def cpu_seconds(pids: list[int]) -> float:
    return sum(_ticks(pid) for pid in pids) / os.sysconf("SC_CLK_TCK")


def database_cpu_seconds(postmaster: int | None) -> float:
    """The CPU time of a PostgreSQL server's processes, those gone included (the
    postmaster's children's time); 0 without one."""
    if postmaster is None:
        return 0.0
    ticks = _ticks(postmaster, children_gone=True)
    children = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
    for child in children:
        with suppress(FileNotFoundError, ProcessLookupError):  # a backend that just ended
            ticks += _ticks(int(child))
    return ticks / os.sysconf("SC_CLK_TCK")
