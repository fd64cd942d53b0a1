"""``POST /agent/input`` speed: liz against a floor app, side by side, on SQLite and PostgreSQL.

    .venv/bin/python bench/pipeline.py                       # everything
    .venv/bin/python bench/pipeline.py --databases sqlite --sequential 100 --concurrent 300
    .venv/bin/python bench/pipeline.py --profile /tmp/prof   # py-spy each server under load (CPU)
    .venv/bin/python bench/pipeline.py --compare ../liz-old  # that checkout's liz too
    .venv/bin/python bench/pipeline.py --compare 17afadf --no-floor --repeat 3  # a commit

Real uvicorn processes on loopback against the scripted LLM in its own process; the floor
(bench/floor_app.py) does the least a Liz turn needs. The servers take turns in rounds;
printed: p50/p95 one at a time, req/s and p95 under load, CPU per turn, as floor ratios.
With --compare, also each cell of this tree's liz over the other checkout's, from the same
run (with --repeat, the median and range of the runs). The other checkout runs with its own
venv's python when it has one (else this one's), and migrates its databases itself; a
commit is checked out in a temporary git worktree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from benchkit import (
    checkout,
    free_port,
    markdown_table,
    new_postgres_database,
    p50_p95_ms,
    percentile,
    postgres_server,
    py_spy,
    running,
)
from openai import AsyncOpenAI
from pipeline_load import AGENT, IN_FLIGHT, QUESTIONS, USER, Load, cpu_seconds, database_cpu_seconds
from scripted_server import scripted_server
from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import AsyncSession

from liz.db.engine import create_engine
from liz.db.migrate import upgrade
from liz.db.tables import MemoryRecord

BENCH = Path(__file__).resolve().parent
EARLIER_MESSAGES = 1000
WARM_UP = 30


@dataclass(frozen=True)
class Server:
    name: str
    kind: str  # "floor" or "liz"
    facts: bool = False
    source: Path | None = None  # another checkout of liz to run (--compare)

    @property
    def python(self) -> str:
        """The checkout's own venv, whose dependencies are the ones it was written for."""
        venv = None if self.source is None else self.source / ".venv" / "bin" / "python"
        return str(venv) if venv is not None and venv.exists() else sys.executable


@dataclass(frozen=True)
class Result:
    server: Server
    p50: float
    p95: float
    rate: float
    p95_loaded: float
    cpu_ms: float  # server CPU per turn under load
    after_ms: float  # server CPU per loaded turn after the load stopped (learning put off)


SERVERS = (
    Server("floor", "floor"),
    Server("liz, facts off", "liz"),
    Server("liz, facts on", "liz", facts=True),
)


def facts_env(enabled: bool) -> dict[str, str]:
    return {"LIZ_FACTS_ENABLED": "true" if enabled else "false"}


async def seed(url: str) -> None:
    """1,000 earlier messages between the user and the agent, alternating, a minute apart."""
    start = datetime.now(UTC) - timedelta(days=2)
    rows = []
    for number in range(EARLIER_MESSAGES):
        said_by_user = number % 2 == 0
        text = (
            f"{QUESTIONS[number % len(QUESTIONS)]} (earlier message {number})"
            if said_by_user
            else "Here is what I would do: write down the goal, the budget and the first "
            f"step, then check back in a week. (earlier reply {number})"
        )
        rows.append(
            {
                "id": str(uuid.uuid4()),
                "user_id": USER,
                "agent_id": AGENT,
                "room_id": f"{AGENT}-{USER}",
                "content": json.dumps({"text": text}),
                "type": "text",
                "generator": "external" if said_by_user else "llm",
                "created_at": start + timedelta(minutes=number),
            }
        )
    engine = create_engine(url)
    try:
        async with AsyncSession(engine) as session, session.begin():
            await session.execute(insert(MemoryRecord), rows)  # ORM bulk: attribute names
    finally:
        await engine.dispose()


async def analyze(url: str) -> None:
    """On PostgreSQL, what autovacuum has done for a database older than a minute: the
    planner's statistics of the tables the turns filled (facts learned since the last
    round). Without them, in a database's first minute, PostgreSQL plans a facts search
    at each run and each word of the query filters all the user's facts."""
    if not url.startswith("postgresql"):
        return
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
            await autocommit.execute(text("ANALYZE"))
    finally:
        await engine.dispose()


def fresh_database(
    kind: str, folder: Path, pg: object, name: str, server: Server | None = None
) -> str:
    if kind == "sqlite":
        url = f"sqlite+aiosqlite:///{folder / name}.db"
    else:
        url = new_postgres_database(pg, name)
    if server is None or server.source is None:
        upgrade(url)
    else:  # its own migrations: the schema its code expects
        migrate = "import sys; from liz.db.migrate import upgrade; upgrade(sys.argv[1])"
        subprocess.run([server.python, "-c", migrate, url], cwd=server.source, check=True)
    asyncio.run(seed(url))
    return url


@contextmanager
def start(
    server: Server, url: str, llm_url: str, processes: int, folder: Path
) -> Iterator[list[tuple[str, int]]]:
    """Run ``processes`` copies of ``server``; yields (base URL, pid) of each."""
    with ExitStack() as stack:
        found = []
        for _ in range(processes):
            port = free_port()
            log = folder / f"{server.kind}-{port}.log"
            if server.kind == "floor":
                command = [sys.executable, str(BENCH / "floor_app.py"), "--port", str(port)]
                env = {"FLOOR_DATABASE_URL": url, "OPENAI_BASE_URL": llm_url}
            else:
                command = [server.python, "-m", "liz", "serve", "--no-migrate"]
                command += ["--log-level", "warning", "--host", "127.0.0.1", "--port", str(port)]
                env = {
                    "DATABASE_URL": url,
                    "OPENAI_BASE_URL": llm_url,
                    "OPENAI_API_KEY": "bench",
                    "LIZ_LLM_MAX_RETRIES": "0",
                    # Liz's rule, as the floor's: the last 100 messages, whatever their length.
                    "LIZ_CONTEXT_TOKENS": "0",
                    **facts_env(server.facts),
                }
                if server.source is not None:
                    env["PYTHONPATH"] = str(server.source)
            base = f"http://127.0.0.1:{port}"
            process = stack.enter_context(running(command, f"{base}/health", log, env, folder))
            found.append((base, process.pid))
        yield found


async def settle(pids: list[int], postmaster: int | None, limit: float = 30.0) -> None:
    """Wait (at most ``limit`` s) until the servers, and PostgreSQL for them, stop
    working in the background (facts being learned, then their vectors put into the
    HNSW graph), so one server's leftovers never slow the next one's turn."""
    deadline = time.monotonic() + limit
    before = cpu_seconds(pids) + database_cpu_seconds(postmaster)
    while time.monotonic() < deadline:
        await asyncio.sleep(0.25)
        now = cpu_seconds(pids) + database_cpu_seconds(postmaster)
        if now - before < 0.01:
            return
        before = now


async def embed_questions(llm: AsyncOpenAI, count: int, took: list[float]) -> None:
    """What recalling facts adds to a turn at least: one query's embedding, through the
    openai SDK from a process of its own, as liz asks for it."""
    for number in range(count):
        began = time.perf_counter()
        await llm.embeddings.create(
            model="bench-embedding",
            input=[QUESTIONS[number % len(QUESTIONS)]],
            encoding_format="base64",
        )
        took.append(time.perf_counter() - began)


async def measure(
    servers: list[tuple[Server, list[str], list[int], str]],
    args: argparse.Namespace,
    kind: str,
    llm_url: str,
    embedding: list[float],
    postmaster: int | None,
) -> list[Load]:
    """Rounds: in each, every server gets its share of sequential then concurrent turns,
    in turn, so a change in the machine's load falls on all of them alike; and the
    query embedding's round trip is timed as often as a server's sequential turns."""
    loads = [Load(urls) for _, urls, _, _ in servers]
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    llm = AsyncOpenAI(base_url=llm_url, api_key="bench", max_retries=0)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client, llm:
        for load in loads:
            await load.sequential(client, WARM_UP)
            load.one_at_a_time.clear()
        await embed_questions(llm, WARM_UP, [])
        for round_number in range(args.rounds):
            await embed_questions(llm, args.sequential // args.rounds, embedding)
            for load, (server, _, pids, url) in zip(loads, servers, strict=True):
                profile = None
                if args.profile is not None:
                    args.profile.mkdir(parents=True, exist_ok=True)
                    slug = server.name.replace(", ", "-").replace(" ", "-")
                    profile = args.profile / f"{kind}-{slug}-{round_number}.txt"
                await analyze(url)
                await settle(pids, postmaster)
                await load.sequential(client, args.sequential // args.rounds)
                await settle(pids, postmaster)
                began = cpu_seconds(pids)
                with py_spy(pids[0], profile):
                    await load.concurrent(client, args.concurrent // args.rounds)
                ended = cpu_seconds(pids)
                load.loaded_cpu += ended - began
                await settle(pids, postmaster)  # what the load left: learning, put off
                load.after_cpu += cpu_seconds(pids) - ended
    return loads


def servers(args: argparse.Namespace) -> list[Server]:
    found = [server for server in SERVERS if not (args.no_facts_on and server.facts)]
    if args.no_floor:
        found = [server for server in found if server.kind != "floor"]
    if args.compare is not None:
        label = args.compare_label
        found += [
            Server(f"liz {label}, facts off", "liz", source=args.compare.resolve()),
            Server(f"liz {label}, facts on", "liz", facts=True, source=args.compare.resolve()),
        ][: 1 if args.no_facts_on else 2]
    return found


def run_database(kind: str, args: argparse.Namespace) -> list[Result]:
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="liz-bench-")))
        pg = None
        if kind == "postgres":
            pg = stack.enter_context(postgres_server(folder / "pg"))
        llm_url = stack.enter_context(scripted_server(dim=256, log_dir=folder))
        processes = 2 if kind == "postgres" else 1
        started = []
        for number, server in enumerate(servers(args)):
            url = fresh_database(kind, folder, pg, f"bench_{number}", server)
            found = stack.enter_context(start(server, url, llm_url, processes, folder))
            started.append((server, [base for base, _ in found], [pid for _, pid in found], url))
        embedding: list[float] = []
        postmaster = None if pg is None else pg.get_pid()
        try:
            loads = asyncio.run(measure(started, args, kind, llm_url, embedding, postmaster))
        except RuntimeError:
            for log in sorted(folder.glob("liz-*.log")):  # the server that failed says why
                if "Traceback" in (said := log.read_text()):
                    print(f"--- {log.name}:\n{said[-3000:]}", flush=True)
            raise
    results = []
    for server, load in zip(servers(args), loads, strict=True):
        p50, p95 = p50_p95_ms(load.one_at_a_time)
        rate = len(load.loaded) / load.loaded_seconds
        cpu_ms = load.loaded_cpu / len(load.loaded) * 1000
        after_ms = load.after_cpu / len(load.loaded) * 1000
        p95_loaded = percentile(load.loaded, 0.95) * 1000
        result = Result(server, p50, p95, rate, p95_loaded, cpu_ms, after_ms)
        results.append(result)
        print(
            f"  {kind} {server.name}: p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
            f"{rate:.0f} req/s and p95 {result.p95_loaded:.0f} ms at {IN_FLIGHT} in flight, "
            f"{cpu_ms:.1f} ms CPU per turn, then {after_ms:.1f} ms",
            flush=True,
        )
        if load.failed:
            print(f"    {len(load.failed)} turns failed, first: {load.failed[0]}", flush=True)
    by_name = {result.server.name: result for result in results}
    off, on = by_name.get("liz, facts off"), by_name.get("liz, facts on")
    if off is not None and on is not None:
        trip, _ = p50_p95_ms(embedding)
        print(
            f"  {kind}: facts on adds {on.p50 - off.p50:.1f} ms to the p50 of a turn; "
            f"the query embedding's round trip is {trip:.1f} ms (p50), so the target is "
            f"{trip + 2:.1f} ms at most",
            flush=True,
        )
    return results


def table(kind: str, results: list[Result]) -> str:
    floors = [r for r in results if r.server.kind == "floor"]
    floor = floors[0] if floors else results[0]

    def cell(value: float, base: float, digits: int) -> str:
        return f"{value:,.{digits}f}" + ("" if r is floor else f" ({value / base:.2f}x)")

    rows = []
    for r in results:
        rows.append(
            [
                r.server.name,
                cell(r.p50, floor.p50, 1),
                cell(r.p95, floor.p95, 1),
                cell(r.rate, floor.rate, 0),
                cell(r.p95_loaded, floor.p95_loaded, 0),
                cell(r.cpu_ms, floor.cpu_ms, 1),
                f"{r.after_ms:.1f}",
            ]
        )
    processes = "two processes on one database" if kind == "postgres" else "one process"
    header = [
        f"{kind} ({processes})",
        "p50 ms",
        "p95 ms",
        f"req/s, {IN_FLIGHT} in flight",
        f"p95 ms, {IN_FLIGHT} in flight",
        "server CPU ms per turn",
        "CPU ms per turn after the load",
    ]
    return markdown_table(header, rows)


COMPARED = ("p50", "p95", "rate", "p95_loaded", "cpu_ms")


def compared(results: list[Result]) -> dict[str, list[float]]:
    """Each cell of this tree's liz over the other checkout's (facts off, facts on)."""
    ours = [r for r in results if r.server.kind == "liz" and r.server.source is None]
    here = {r.server.facts: r for r in ours}
    there = {r.server.facts: r for r in results if r.server.source is not None}
    return {
        f"facts {'on' if facts else 'off'}": [
            getattr(here[facts], field) / getattr(there[facts], field) for field in COMPARED
        ]
        for facts in sorted(there, key=int)
    }


def compare_table(kind: str, label: str, runs: list[dict[str, list[float]]]) -> str:
    rows = []
    for name in runs[0]:
        cells = []
        for column in range(len(COMPARED)):
            ratios = [run[name][column] for run in runs]
            cell = f"{statistics.median(ratios):.2f}"
            if len(ratios) > 1:
                cell += f" ({min(ratios):.2f}-{max(ratios):.2f})"
            cells.append(cell)
        rows.append([f"liz, {name}", *cells])
    processes = "two processes on one database" if kind == "postgres" else "one process"
    header = [
        f"{kind} ({processes}): this tree / {label}",
        "p50 ms",
        "p95 ms",
        f"req/s, {IN_FLIGHT} in flight",
        f"p95 ms, {IN_FLIGHT} in flight",
        "server CPU ms per turn",
    ]
    return markdown_table(header, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--databases", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--sequential", type=int, default=200, help="requests one at a time")
    parser.add_argument("--concurrent", type=int, default=800, help="requests, 16 at once")
    parser.add_argument("--rounds", type=int, default=8, help="servers take turns this often")
    parser.add_argument("--no-facts-on", action="store_true", help="skip liz with facts on")
    parser.add_argument("--profile", type=Path, help="folder for py-spy profiles of the servers")
    parser.add_argument("--compare", help="also run liz from this checkout (or commit)")
    parser.add_argument("--compare-label", help="its name in the table (default: folder)")
    parser.add_argument("--no-floor", action="store_true", help="skip the floor app")
    parser.add_argument("--repeat", type=int, default=1, help="run it all this often")
    args = parser.parse_args()
    with ExitStack() as stack:
        if args.compare is not None:
            given = Path(args.compare)
            args.compare_label = args.compare_label or (
                given.name if given.is_dir() else args.compare
            )
            args.compare = given if given.is_dir() else stack.enter_context(checkout(args.compare))
        run_all(args)


def run_all(args: argparse.Namespace) -> None:
    tables = []
    comparisons: dict[str, list[dict[str, list[float]]]] = {kind: [] for kind in args.databases}
    for run in range(args.repeat):
        for kind in args.databases:
            names = ", ".join(server.name for server in servers(args))
            print(f"{kind}, run {run + 1} of {args.repeat}: {names}", flush=True)
            try:
                results = run_database(kind, args)
            except RuntimeError as exc:  # one failed run leaves the others' figures
                print(f"  {kind}, run {run + 1}: failed: {exc}", flush=True)
                continue
            if run == args.repeat - 1:
                tables.append(table(kind, results))
            if args.compare is not None:
                comparisons[kind].append(compared(results))
    print(
        f"\nPOST /agent/input, {EARLIER_MESSAGES:,} earlier messages for the user, "
        f"ratios to the {'first liz' if args.no_floor else 'floor'} "
        f"({time.strftime('%Y-%m-%d')}):\n"
    )
    print("\n\n".join(tables))
    if args.compare is not None:
        label = args.compare_label
        runs = f"median and range of {args.repeat} runs" if args.repeat > 1 else "one run"
        print(f"\nThis tree's liz over {label}'s, each cell from the same run ({runs}):\n")
        done = [kind for kind in args.databases if comparisons[kind]]
        print("\n\n".join(compare_table(kind, label, comparisons[kind]) for kind in done))


if __name__ == "__main__":
    main()
