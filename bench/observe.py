"""What tracing costs a turn: liz with tracing off, and exporting every span over OTLP/HTTP.

    .venv/bin/python bench/observe.py                      # SQLite (~1 minute)
    .venv/bin/python bench/observe.py --sequential 100 --concurrent 400

Two ``liz serve`` processes on SQLite (facts off), set up as in bench/pipeline.py: the
scripted LLM in a process of its own, 1,000 earlier messages for the user. One runs
without any OTEL_* variable (tracing unconfigured), the other exports to an OTLP/HTTP
receiver in a process of its own that reads each request and answers 200. They take
turns in rounds. Printed: p50 one request at a time, req/s at 16 in flight, and the
traced server's ratio to the untraced one (the target: at least 0.95 of its req/s).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
from benchkit import free_port, markdown_table, p50_p95_ms, running
from pipeline import WARM_UP, fresh_database
from pipeline_load import Load
from scripted_server import scripted_server

BENCH = Path(__file__).resolve().parent
RECEIVER = """
import sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

async def traces(request):
    await request.body()
    return Response(b"", media_type="application/x-protobuf")

async def health(request):
    return Response(b"ok")

app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/health", health)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


@contextmanager
def receiver(folder: Path) -> Iterator[str]:
    port = free_port()
    script = folder / "receiver.py"
    script.write_text(RECEIVER)
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, str(script), str(port)]
    with running(command, f"{base}/health", folder / "receiver.log", {}, folder):
        yield base


@contextmanager
def liz_server(url: str, llm_url: str, folder: Path, otel: dict[str, str]) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "liz", "serve", "--no-migrate", "--log-level", "warning"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    env = {
        "DATABASE_URL": url,
        "OPENAI_BASE_URL": llm_url,
        "OPENAI_API_KEY": "bench",
        "LIZ_LLM_MAX_RETRIES": "0",
        "LIZ_CONTEXT_TOKENS": "0",
        "LIZ_FACTS_ENABLED": "false",
        **otel,
    }
    base = f"http://127.0.0.1:{port}"
    with running(command, f"{base}/health", folder / f"liz-{port}.log", env, folder):
        yield base


async def measure(urls: list[str], args: argparse.Namespace) -> list[Load]:
    loads = [Load([url]) for url in urls]
    async with httpx.AsyncClient(timeout=120) as client:
        for load in loads:
            await load.sequential(client, WARM_UP)
            load.one_at_a_time.clear()
        for _ in range(args.rounds):
            for load in loads:
                await load.sequential(client, args.sequential // args.rounds)
                await load.concurrent(client, args.concurrent // args.rounds)
    return loads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sequential", type=int, default=200, help="requests one at a time")
    parser.add_argument("--concurrent", type=int, default=800, help="requests, 16 at once")
    parser.add_argument("--rounds", type=int, default=8, help="servers take turns this often")
    args = parser.parse_args()
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="liz-bench-")))
        llm_url = stack.enter_context(scripted_server(dim=256, log_dir=folder))
        sink = stack.enter_context(receiver(folder))
        traced_env = {"OTEL_EXPORTER_OTLP_ENDPOINT": sink, "OTEL_SERVICE_NAME": "liz-bench"}
        off = fresh_database("sqlite", folder, None, "off")
        on = fresh_database("sqlite", folder, None, "on")
        urls = [
            stack.enter_context(liz_server(off, llm_url, folder, {})),
            stack.enter_context(liz_server(on, llm_url, folder, traced_env)),
        ]
        loads = asyncio.run(measure(urls, args))
    rows = []
    rates = [len(load.loaded) / load.loaded_seconds for load in loads]
    for name, load, rate in zip(("tracing off", "tracing on (OTLP)"), loads, rates, strict=True):
        p50, p95 = p50_p95_ms(load.one_at_a_time)
        ratio = rate / rates[0]
        rows.append([name, f"{p50:.1f}", f"{p95:.1f}", f"{rate:.0f}", f"{ratio:.2f}"])
    header = ["server", "p50 ms", "p95 ms", "req/s (16 in flight)", "req/s vs off"]
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()
