"""Soak: two ``liz serve`` processes on one PostgreSQL with pgvector, under steady load.

    .venv/bin/python bench/soak.py --duration 180

16 clients send turns for ``--duration`` seconds, to both processes in turn, each
client for a few users of its own (so a user's turns, their learning and the other
process's learning meet on the same rows); every fourth request is streamed. Facts
are on and learned while the load runs. Afterwards it waits for the learning queue to
empty, then counts what was stored: every message and every reply once, and one fact
per message learned. It prints a table: requests, non-200 answers, the exactly-once
counts, and the p50 and p95 latency.

The LLM is the scripted server, in a process of its own: replies name the message they
answer, and extraction writes one fact per message, naming it, so every row can be
traced back to the request that caused it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from benchkit import (
    free_port,
    markdown_table,
    new_postgres_database,
    p50_p95_ms,
    postgres_server,
    running,
    scratch_folder,
    stop,
    wait_ready,
)
from sqlalchemy import text

from liz.db.engine import create_engine
from liz.db.migrate import upgrade

AGENT = "business-advisor"
CLIENTS = 16
USERS_PER_CLIENT = 3
STREAM_EVERY = 4
# Learned soon after a user goes quiet, so learning runs beside the turns all along.
LEARN_AFTER_IDLE = "2"
# The whole queue learned after the load: how long that may take at most.
DRAIN_SECONDS = 120.0
WORDS = [
    f"{head}{tail}"
    for head in ("tea", "shop", "rent", "hire", "tax", "loan", "cake", "bike", "farm", "wine")
    for tail in ("ly", "er", "ing", "ed", "ist", "ward", "ful", "less", "ness", "ish")
]
CURRENT_INPUT = re.compile(r"<CURRENT_USER_INPUT>\s*(.*?)\s*</CURRENT_USER_INPUT>", re.S)
LISTED = re.compile(r'<MESSAGE number="(\d+)">\nuser: (.*)$', re.M)


# -- the scripted LLM, as a process of its own ---------------------------------------------


def serve_llm(port: int) -> None:
    import uvicorn

    from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI

    server = ScriptedOpenAI(embedding_dim=256)

    def answer(request: RecordedRequest) -> Any:
        if request.schema_name == "ExtractedFacts":
            listed = LISTED.findall(request.prompt)
            facts = [
                {
                    "message": int(number),
                    "text": f"User said {said}",
                    "subject": "user",
                    "categories": ["soak", "notes"],
                }
                for number, said in listed
            ]
            return {"facts": facts}
        if request.response_format is not None:
            return {"value": True, "explanation": "scripted"}
        match = CURRENT_INPUT.search(request.prompt)
        return f"reply to {match.group(1) if match else '?'}"

    server.respond_with(answer)
    server._requests = _Forgetful()  # it keeps every request for tests; a soak sends many
    uvicorn.run(server.app, host="127.0.0.1", port=port, log_level="warning", log_config=None)


class _Forgetful(list[Any]):
    def append(self, item: Any) -> None:
        pass


@contextmanager
def scripted_llm(folder: Path) -> Iterator[str]:
    import subprocess

    port = free_port()
    log = folder / "scripted-llm.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, __file__, "--serve-llm", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_ready(f"http://127.0.0.1:{port}/v1/models", process, log)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            stop(process)


# -- the load --------------------------------------------------------------------------------


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    answered: list[str] = field(default_factory=list)  # messages answered 200
    sent: list[str] = field(default_factory=list)
    streamed: int = 0


async def client_loop(
    number: int, urls: list[str], until: float, tally: Tally, http: httpx.AsyncClient
) -> None:
    sent = 0
    words = random.Random(number)
    while time.monotonic() < until:
        user = f"soak-user-{number}-{sent % USERS_PER_CLIENT}"
        # Words of its own: no two messages' facts alike enough to be reconciled.
        message = f"soak {number}-{sent}: " + " ".join(words.sample(WORDS, 6))
        url = f"{urls[(number + sent) % len(urls)]}/agent/input"
        streaming = sent % STREAM_EVERY == STREAM_EVERY - 1
        sent += 1
        body = {"input": {"agentId": AGENT, "userId": user, "text": message}}
        headers = {"accept": "text/event-stream"} if streaming else {}
        tally.sent.append(message)
        began = time.perf_counter()
        try:
            response = await http.post(url, json=body, headers=headers)
            status = str(response.status_code)
            if streaming and response.status_code == 200:
                tally.streamed += 1
                last = response.text.strip().split("\n\n")[-1]
                if not last.startswith("event: reply"):
                    status = "200 stream ended with an error"
        except httpx.HTTPError as exc:
            status = type(exc).__name__
        tally.latencies.append(time.perf_counter() - began)
        tally.statuses[status] += 1
        if status == "200":
            tally.answered.append(message)


async def load(urls: list[str], seconds: float) -> Tally:
    tally = Tally()
    until = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=CLIENTS * 2, max_keepalive_connections=CLIENTS * 2)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        await asyncio.gather(*(client_loop(n, urls, until, tally, http) for n in range(CLIENTS)))
    return tally


async def wait_for_learning(urls: list[str]) -> dict[str, Any]:
    """The learning backlog once it is empty (or when the wait ran out)."""
    deadline = time.monotonic() + DRAIN_SECONDS
    learning: dict[str, Any] = {}
    async with httpx.AsyncClient(timeout=10) as http:
        while time.monotonic() < deadline:
            learning = (await http.get(f"{urls[0]}/health")).json().get("learning", {})
            if learning.get("pending") == 0:
                break
            await asyncio.sleep(1)
    return learning


# -- the counts --------------------------------------------------------------------------------


async def stored(url: str) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """How often each message, each reply (by the message it names) and each fact (by
    the message it came from) is stored."""
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            memories = await connection.execute(
                text('SELECT "generator", "content" FROM "Memory" WHERE "userId" LIKE \'soak-%\'')
            )
            said, replies = Counter[str](), Counter[str]()
            for generator, content in memories:
                words = json.loads(content).get("text", "")
                if generator == "external":
                    said[words] += 1
                else:
                    replies[words.removeprefix("reply to ")] += 1
            facts = Counter[str](
                row[0].removeprefix("User said ")
                for row in await connection.execute(
                    text('SELECT "text" FROM "Fact" WHERE "retiredAt" IS NULL')
                )
            )
    finally:
        await engine.dispose()
    return said, replies, facts


def once(counts: Counter[str], wanted: list[str]) -> tuple[int, int, int]:
    """Of ``wanted``: how many are stored once, not at all, more than once."""
    return (
        sum(counts[key] == 1 for key in wanted),
        sum(counts[key] == 0 for key in wanted),
        sum(counts[key] > 1 for key in wanted),
    )


def report(tally: Tally, learning: dict[str, Any], rows: Any, seconds: float) -> str:
    said, replies, facts = rows
    p50, p95 = p50_p95_ms(tally.latencies)
    non_200 = sum(count for status, count in tally.statuses.items() if status != "200")
    messages = once(said, tally.sent)
    answered = once(replies, tally.answered)
    learned = once(facts, [m for m in tally.sent if said[m] > 0])
    header = ["what", "count"]
    table = [
        ["duration (s)", f"{seconds:.0f}"],
        ["requests", str(len(tally.latencies))],
        ["streamed", str(tally.streamed)],
        ["non-200", str(non_200)],
        *[
            [f"  answered {status}", str(count)]
            for status, count in sorted(tally.statuses.items())
            if status != "200"
        ],
        ["messages stored once / missing / more", "{} / {} / {}".format(*messages)],
        ["replies (to 200s) stored once / missing / more", "{} / {} / {}".format(*answered)],
        ["facts learned once / missing / more", "{} / {} / {}".format(*learned)],
        [
            "learning left: pending / failed",
            f"{learning.get('pending')} / {learning.get('failed')}",
        ],
        ["p50 (ms)", f"{p50:.0f}"],
        ["p95 (ms)", f"{p95:.0f}"],
    ]
    return markdown_table(header, table)


def soak(seconds: float) -> str:
    with ExitStack() as stack:
        folder = stack.enter_context(scratch_folder("liz-soak-"))
        pg = stack.enter_context(postgres_server(folder / "pg"))
        url = new_postgres_database(pg, "soak")
        upgrade(url)
        llm = stack.enter_context(scripted_llm(folder))
        env = {
            "DATABASE_URL": url,
            "OPENAI_BASE_URL": llm,
            "OPENAI_API_KEY": "soak",
            "LIZ_LLM_MAX_RETRIES": "0",
            "LIZ_LEARN_AFTER_IDLE": LEARN_AFTER_IDLE,
            "LIZ_FACTS_RECONCILE_THRESHOLD": "0.99",  # each message's fact stands alone
        }
        urls = []
        for _ in range(2):
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            command = [sys.executable, "-m", "liz", "serve", "--no-migrate"]
            command += ["--log-level", "warning", "--host", "127.0.0.1", "--port", str(port)]
            stack.enter_context(
                running(command, f"{base}/health", folder / f"serve-{port}.log", env, folder)
            )
            urls.append(base)
        tally = asyncio.run(load(urls, seconds))
        learning = asyncio.run(wait_for_learning(urls))
        rows = asyncio.run(stored(url))
        logs = "".join(path.read_text() for path in sorted(folder.glob("serve-*.log")))
        errors = [line for line in logs.splitlines() if " ERROR " in line or "Error" in line]
        table = report(tally, learning, rows, seconds)
        if errors:
            table += f"\n\n{len(errors)} error lines in the servers' logs; the first:\n"
            table += "\n".join(errors[:5])
        return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of load")
    parser.add_argument("--serve-llm", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_llm is not None:
        serve_llm(args.serve_llm)
        return
    print(soak(args.duration))


if __name__ == "__main__":
    main()
