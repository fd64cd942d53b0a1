"""What tracing costs a turn: liz with tracing off, and exporting every span over OTLP/HTTP.

    .venv/bin/python bench/observe.py                      # SQLite (~2 minutes)
    .venv/bin/python bench/observe.py --sequential 100 --concurrent 400
    .venv/bin/python bench/observe.py --profile /tmp/prof  # py-spy the servers under load
    .venv/bin/python bench/observe.py --variant "SDK batches:OTEL_BSP_MAX_EXPORT_BATCH_SIZE=512"

Two ``liz serve`` processes on SQLite (facts off), set up as in bench/pipeline.py: the
scripted LLM in a process of its own, 1,000 earlier messages for the user. One runs
without any OTEL_* variable (tracing unconfigured), the other exports to an OTLP/HTTP
receiver in a process of its own that keeps each request (and counts the spans at the
end). They take turns in rounds. Printed: p50 one request at a time, req/s at 16 in
flight, the server's CPU per turn (counted until it is idle again, so spans exported
after the load count too), the traced server's ratios to the untraced one (the target:
at least 0.95 of its req/s); then what one span costs the SDK, part by part
(bench/span_cost.py), and how much of a turn that is.
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
from benchkit import free_port, markdown_table, p50_p95_ms, py_spy, running
from pipeline import WARM_UP, fresh_database, settle
from pipeline_load import Load, cpu_seconds
from scripted_server import scripted_server
from span_cost import shape_rows, span_cost_rows

BENCH = Path(__file__).resolve().parent
RECEIVER = """
import sys, uvicorn
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

bodies = []  # decoded only when asked, so the receiver takes little CPU under load

async def traces(request):
    bodies.append(await request.body())
    return Response(b"", media_type="application/x-protobuf")

async def spans(request):  # how many spans the server named ?service= sent
    count = 0
    for body in bodies:
        for r in ExportTraceServiceRequest.FromString(body).resource_spans:
            named = [a.value.string_value for a in r.resource.attributes if a.key == "service.name"]
            if named == [request.query_params["service"]]:
                count += sum(len(s.spans) for s in r.scope_spans)
    return Response(str(count))

async def health(request):
    return Response(b"ok")

routes = [Route("/v1/traces", traces, methods=["POST"]), Route("/spans", spans)]
routes.append(Route("/health", health))
uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
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
def liz_server(
    url: str, llm_url: str, folder: Path, otel: dict[str, str], source: Path | None = None
) -> Iterator[tuple[str, int]]:
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
    if source is not None:
        env["PYTHONPATH"] = str(source)
    base = f"http://127.0.0.1:{port}"
    with running(command, f"{base}/health", folder / f"liz-{port}.log", env, folder) as process:
        yield base, process.pid


async def measure(
    names: list[str], servers: list[tuple[str, int]], args: argparse.Namespace
) -> list[Load]:
    """Rounds of sequential then concurrent turns, each server in turn; a server's CPU is
    counted from the load's start until it is idle again, so spans exported after the
    load count too."""
    loads = [Load([url]) for url, _ in servers]
    async with httpx.AsyncClient(timeout=120) as client:
        for load in loads:
            await load.sequential(client, WARM_UP)
            load.one_at_a_time.clear()
        for round_number in range(args.rounds):
            for name, load, (_, pid) in zip(names, loads, servers, strict=True):
                await load.sequential(client, args.sequential // args.rounds)
                await settle([pid], None)
                began = cpu_seconds([pid])
                profile = None
                if args.profile is not None:
                    args.profile.mkdir(parents=True, exist_ok=True)
                    slug = "-".join(name.replace("(", "").replace(")", "").split())
                    profile = args.profile / f"{slug}-{round_number}.txt"
                with py_spy(pid, profile):
                    await load.concurrent(client, args.concurrent // args.rounds)
                await settle([pid], None)
                load.loaded_cpu += cpu_seconds([pid]) - began
    return loads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sequential", type=int, default=200, help="requests one at a time")
    parser.add_argument("--concurrent", type=int, default=1600, help="requests, 16 at once")
    parser.add_argument("--rounds", type=int, default=8, help="servers take turns this often")
    parser.add_argument("--profile", type=Path, help="folder for py-spy profiles under load")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:VAR=VALUE,...",
        help="also a traced server with these variables (OTEL_BSP_* for instance)",
    )
    parser.add_argument("--compare", type=Path, help="also a traced server from this checkout")
    parser.add_argument("--span-turns", type=int, default=3000, help="turns for the span table")
    args = parser.parse_args()
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="liz-bench-")))
        llm_url = stack.enter_context(scripted_server(dim=256, log_dir=folder))
        sink = stack.enter_context(receiver(folder))
        traced_env = {"OTEL_EXPORTER_OTLP_ENDPOINT": sink, "OTEL_SERVICE_NAME": "liz-bench"}
        wanted: list[tuple[str, dict[str, str], Path | None]] = [
            ("tracing off", {}, None),
            ("tracing on (OTLP)", traced_env, None),
        ]
        for variant in args.variant:
            name, _, given = variant.partition(":")
            pairs = dict(pair.split("=", 1) for pair in given.split(",") if pair)
            own = {**traced_env, "OTEL_SERVICE_NAME": f"liz-bench-{len(wanted)}", **pairs}
            wanted.append((f"tracing on, {name}", own, None))
        if args.compare is not None:
            other = {**traced_env, "OTEL_SERVICE_NAME": "liz-bench-compared"}
            wanted.append((f"tracing on, {args.compare.name}", other, args.compare.resolve()))
        names = [name for name, _, _ in wanted]
        with ExitStack() as running_servers:  # stopped first: their last spans are exported
            servers = []
            for number, (_, otel, source) in enumerate(wanted):
                url = fresh_database("sqlite", folder, None, f"liz_{number}")
                server = liz_server(url, llm_url, folder, otel, source)
                servers.append(running_servers.enter_context(server))
            loads = asyncio.run(measure(names, servers, args))
        # The plain traced server's spans: variants may sample, or be another checkout.
        asked = {"service": "liz-bench"}
        exported = int(httpx.get(f"{sink}/spans", params=asked, timeout=120).text)
        parts = span_cost_rows(sink, args.span_turns)
    print_tables(names, loads, parts, exported, args)
    print("\nA turn's spans in the SDK (encoded as OTLP), shaped as now and as before:\n")
    print(markdown_table(["turn", "us of CPU", "vs before"], shape_rows(args.span_turns)))


def print_tables(
    names: list[str],
    loads: list[Load],
    parts: list[list[str]],
    exported: int,
    args: argparse.Namespace,
) -> None:
    rows = []
    rates = [len(load.loaded) / load.loaded_seconds for load in loads]
    cpus = [load.loaded_cpu / len(load.loaded) * 1000 for load in loads]
    for name, load, rate, cpu in zip(names, loads, rates, cpus, strict=True):
        p50, p95 = p50_p95_ms(load.one_at_a_time)
        ratios = f"{rate / rates[0]:.2f}", f"{cpu / cpus[0]:.2f}"
        rows.append([name, f"{p50:.1f}", f"{p95:.1f}", f"{rate:.0f}", f"{cpu:.2f}", *ratios])
    header = ["server", "p50 ms", "p95 ms", "req/s (16 in flight)", "CPU ms per turn"]
    header += ["req/s vs off", "CPU vs off"]
    print(
        f"\nPOST /agent/input, {args.sequential} turns one at a time and {args.concurrent} "
        f"at 16 in flight, in {args.rounds} rounds:\n"
    )
    print(markdown_table(header, rows))
    print("\nOne span's CPU in the SDK, part by part, in turns shaped as liz's:\n")
    print(markdown_table(["part", "us per span", "added"], parts))
    per_turn = exported / loads[1].sent
    sdk_ms = per_turn * float(parts[-1][1]) / 1000
    print("\nThe spans of a turn, at that cost a span:\n")
    header = ["spans exported per turn", "SDK CPU ms per turn", "of an untraced turn's CPU"]
    row = [f"{per_turn:.1f}", f"{sdk_ms:.2f}", f"{sdk_ms / cpus[0]:.0%}"]
    print(markdown_table(header, [row]))


if __name__ == "__main__":
    main()
