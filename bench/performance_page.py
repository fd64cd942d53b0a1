"""Run every bench and write docs/performance.md from the tables they print.

    .venv/bin/python bench/performance_page.py                  # all (what `make bench` runs)
    .venv/bin/python bench/performance_page.py --only context.py cli_startup.py
    .venv/bin/python bench/performance_page.py --from DIR --date "2026-12-02 15:46"

Each bench runs as a process of its own; its printed Markdown tables (and the line that
introduces them) go on the page with the machine and the date. With --only, the other
sections keep the tables the page already holds. With --from, the outputs are read from
DIR/<bench>.txt instead of being run (for a page made from a run recorded elsewhere).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "performance.md"
SECTION_START = "<!-- bench: {name} -->"
SECTION_END = "<!-- end bench: {name} -->"


@dataclass(frozen=True)
class Bench:
    script: str
    title: str
    what: str
    options: str = ""  # the script's options, as typed
    key: str = ""  # the section's name when the script has one already

    @property
    def name(self) -> str:
        """The section's name (``--only``, ``--from DIR/<name>.txt``)."""
        return self.key or self.script

    @property
    def command(self) -> str:
        return f"{self.script} {self.options}".strip()


BENCHES = [
    Bench(
        "pipeline.py",
        "One turn, against the least a turn needs",
        "`POST /agent/input` served by real uvicorn processes over loopback, the user having "
        "1,000 earlier messages, against the floor (`bench/floor_app.py`): a bare Starlette "
        "handler doing the least a Liz turn needs (validate the body, read the last 100 "
        "messages, render the prompt, one chat call, insert two rows). PostgreSQL runs two "
        "processes of each server on one database. The last column is the servers' CPU per "
        "turn after the load stopped: with facts on, the learning, which waits for a lull.",
    ),
    Bench(
        "pipeline.py",
        "One turn, this tree against 17afadf",
        "The same servers as above, without the floor, beside liz at commit 17afadf (a "
        "temporary `git worktree`, migrating its own databases), in the same run: each cell "
        "is this tree's figure over 17afadf's, the median of three runs and their range. "
        "The target: at least 0.90 of 17afadf's req/s in every cell",
        "--no-floor --repeat 3 --compare 17afadf --sequential 96 --concurrent 480",
        key="pipeline-vs-17afadf",
    ),
    Bench(
        "memory.py",
        "Facts store, side by side with mem0",
        "One fact stored without an LLM, and the ten best searched, in one user's scope of "
        "1k, 10k and 100k facts at 256 and 1536 dimensions, for liz on SQLite and PostgreSQL "
        "and for mem0 (its embedded Qdrant, `infer=False`, in a venv of its own); "
        "p50 / p95 ms.",
    ),
    Bench(
        "embedding_request.py",
        "One embeddings request",
        "The same embeddings request sent three ways, taking turns: liz's "
        "(`LLMClient.embed_float32`), the openai SDK's `embeddings.create`, and aiohttp alone.",
    ),
    Bench(
        "context.py",
        "Prompt size",
        "Prompt tokens per turn of a 300-turn conversation under Liz's rule (the last 100 "
        "messages) and under `LIZ_CONTEXT_TOKENS=4000`.",
    ),
    Bench(
        "prompt_cache.py",
        "Prompt cache",
        "What an OpenAI-style prefix cache (`liz.testing.prompt_cache`) serves of each reply "
        "prompt over 80 turns, facts on, for a character of about 1,700 tokens: the layout "
        "of the reference commit (a temporary `git worktree` of `main`) against this tree's, "
        "on a chat and on long messages, each longer than `LIZ_CONTEXT_TOKENS`. Counted: "
        "turns 2 and later whose prompt has at least 1,024 tokens. The targets: a median "
        "share of at least 0.9, and billed input per turn at most half the reference's at "
        "OpenAI's cached price, with the same facts recalled",
    ),
    Bench(
        "learning_cost.py",
        "Learning cost",
        "LLM requests and prompt tokens per turn of a replayed conversation (four users "
        "talking at once, messages seconds apart, facts said, repeated and contradicted), "
        "learning after each reply (`LIZ_LEARN_AFTER_IDLE=0`) against learning per burst "
        "(the default), on a virtual clock; both end with the same active facts. Learning's "
        "cost per turn is about one extraction, one embeddings request and at most one "
        "reconcile call divided by the messages in a burst; bursts of different users "
        "learned at the same beat share their embeddings request. Beside them, mem0's "
        "`Memory.add(..., infer=True)` once per turn on the same exchanges (the user's "
        "message and the reply), in a venv of its own, against the same scripted model: it "
        "answers no turn, so it has no reply, route or recall column, and every embeddings "
        "request of its `add` counts as learning. It only adds: a contradicted fact stays "
        "beside the new one.",
    ),
    Bench(
        "cli_startup.py",
        "CLI start",
        "`liz --help` and a shell-completion TAB against a bare `python -c pass`.",
    ),
    Bench(
        "tools.py",
        "A turn with one tool call, against the SDK alone",
        "CPU and wall time a turn, in-process: the floor is the openai SDK's two "
        "`chat.completions.create` calls around the function; liz's loop is `ToolTurn.run` on "
        "the same messages; liz's turn is `AgentFramework.process` through the standard chain "
        "on a SQLite file (the user's last 100 messages loaded, the turn stored). For scale, an "
        "agent without tools against one `create` call. The target: liz's turn at most 2 ms "
        "of CPU over the floor.",
    ),
    Bench(
        "llm_boundary.py",
        "LLM boundary",
        "CPU a turn in the client's process, the scripted server in its own: liz's requests "
        "(`client.post`, whole answers read by `liz.llm.calls`) against the openai SDK's "
        "typed calls doing the same job, observed by the same hook: `chat.completions.create`, "
        "for tool turns streamed `create(stream=True)` and the `chat.completions.stream` "
        "helper, and `embeddings.create`. The prompt is shaped as liz's (a system message, "
        "about 4 KB of context, three tools). The issue's threshold: the typed path at most "
        "0.5 ms of CPU a turn over liz's",
    ),
    Bench(
        "observe.py",
        "Tracing",
        "Two `liz serve` processes on SQLite, facts off, taking turns: one without any "
        "`OTEL_*` variable (tracing unconfigured: `liz.observe.tracing.span` creates "
        "nothing), one exporting every span over OTLP/HTTP to a receiver process (a turn: "
        "the server's span, the turn's with an event per chain step, the chat call's). The "
        "target is at least 0.95 of the untraced server's req/s. The second table is the "
        "OpenTelemetry SDK's CPU per span in the bench's own process, its parts added one "
        "at a time; the third, what a turn's spans cost at that rate",
    ),
    Bench(
        "metrics.py",
        "Prometheus /metrics",
        "A `liz serve` process that has answered one turn for each of 10,000 users across "
        "10 agents (users are no label, so they add no series), then `GET /metrics` and "
        "`GET /health` asked in turns, one at a time, over loopback HTTP: with the server "
        "idle, then while other turns keep 16 in flight. `/metrics` reads the learning "
        "backlog from the database, then renders with prometheus-client. The target is "
        "under 5 ms at p95",
    ),
    Bench(
        "telegram_cost.py",
        "A Telegram message, beside an HTTP turn",
        "CPU per message of a `liz telegram run` process reading from the fake Bot API "
        "(`liz.testing.fake_telegram`) over loopback, beside a `liz serve` process taking "
        "`POST /agent/input` one at a time, on the same agent, SQLite, facts off, each "
        "window from idle to idle (a long poll waiting costs nothing). Each path pays its "
        "own platform I/O: the HTTP turn parses the request and writes the response; the "
        "Telegram message is read with `getUpdates`, stored in the inbox, answered, and "
        "sent with `sendMessage` through the outbox. One at a time, each message pays its "
        "own `getUpdates`; in a burst one `getUpdates` brings many. The echo bot is "
        "python-telegram-bot alone doing that I/O (no database, no turn), the least any "
        "polling bot pays; the column beside it takes that I/O out of the Telegram "
        "message. The scripted LLM answers at once, so no typing is shown (it is from an "
        "answer's first second on, one `sendChatAction` every 4 s)",
    ),
]

INTRO = """# Performance

This page is written by `make bench` (`bench/performance_page.py`), which runs the
benches below and puts the tables they print here. Each bench measures liz against a
reference run side by side in the same run, so read the ratios: on a shared machine an
absolute time means little. The LLM is the scripted OpenAI-compatible server
(`liz.testing`) in a process of its own, which answers at once, so every figure is the
framework's own cost.
"""

DECISIONS = """## Design decisions and their measured reasons

- **Facts are searched with numpy on SQLite**, not sqlite-vec: this Python cannot load
  SQLite extensions, and an exact scan of one user's 10,000 facts of 256 dimensions takes
  about 1 ms of CPU, with the same top-k as pgvector.
- **Large scopes of long vectors are ranked by sign bits first**: past about 2,600 facts
  of 1536 dimensions a full scan is bound by memory speed (45 ms at 100k), the sign-bit
  pass about 7 ms.
- **The statements every turn runs go straight to the driver**: through SQLAlchemy a
  statement cost four hops to SQLite's thread, and those hops were most of a turn's
  database cost.
- **Every SQLAlchemy statement on SQLite is one hop** (`liz/_compat.py`), where
  the aiosqlite adapter made four: a read session of one statement went from 0.75 to
  0.50 ms of CPU, of three statements from 1.55 to 0.84 ms; a turn with facts on, from
  10.4 to 9.4 ms at 16 in flight (`bench/pipeline.py --compare`, one run).
- **A facts search holds no connection while its query's embedding is out**: it reads
  the keyword matches, lets the connection go, and reads again once the vector came. A
  slow embeddings endpoint no longer keeps a connection per search busy.
- **On PostgreSQL a store leaves the HNSW graph to a background step**: inserting a vector
  into the graph cost 2.5 to 4.5 ms, most of a store.
- **Embeddings stay in the row** (migrations `0009`, `0011`): stored out of line, an exact
  search of 1,000 facts of 1536 dimensions took about 10 ms where 1.5 ms sufficed.
- **Fact ids are time-ordered** (the UUID version 7 layout): with random ids, at 100k
  facts, each store wrote twice the log (16 kB against 8).
- **`DB_POOL_SIZE` defaults to 10**: with 5, PostgreSQL opened a connection for nearly
  every turn under load, and facts on ran at 0.53 of the floor's rate instead of 0.64.
- **Queries asked for at once share one embeddings request**: each request costs about a
  millisecond of the SDK's CPU however many texts it carries; under 16 chats in flight a
  quarter fewer requests were sent.
- **Learning waits for a lull in the turns**: it takes more CPU than the turn it learns
  from, so a burst is answered first and learned from right after.
- **Learning waits for the conversation to go quiet** (`LIZ_LEARN_AFTER_IDLE`): one
  extraction, one embeddings request and at most one reconcile call per burst instead of
  per message; in the Learning cost table, learning's LLM calls per turn fell from 1.16 to
  0.15 and its prompt tokens per turn from 298 to 61, with the same facts in the end.
- **Bursts due in the same window are learned at one beat** (every half of
  `LIZ_LEARN_AFTER_IDLE`) and share one embeddings request: in the Learning cost table,
  learning's embeddings requests per turn fell from 0.11 to 0.08, for facts learned at
  most half the idle time later.
- **The conversation's lines are formatted once per message** (an LRU cache): rendering
  `context.j2` with 100 messages took 1.3 ms, 0.16 ms with the cache.
- **LLM requests use the SDK's aiohttp transport**: a chat call and a query embedding cost
  2.0 ms of CPU instead of 2.8 over the default one.
- **The chain runs through a small class, not a self-calling closure**: the closure's
  reference cycle kept each turn's objects for the garbage collector, which took 8% of a
  loaded server's CPU instead of 3%.
- **`LIZ_CONTEXT_TOKENS` defaults to 4000**: about a quarter of the prompt tokens Liz's
  rule sends (the Prompt size table), and the whole prompt still fits a small model's 8k
  context.
- **Prompts go from what never changes to what changes every turn**, the character sampled
  once a day and the conversation's window moving in steps from one anchor to the next:
  in the Prompt cache table, the median share of a reply prompt a prefix cache serves
  went from 0.50 to 0.95 on a chat (0.00 to 0.89 on long messages, where each turn adds
  about a tenth of a prompt), and the billed input per turn to 0.21 of the earlier
  layout's at GPT-5's prices (0.29 on long messages). At GPT-4o's, where cached input
  costs half the input price, 0.57.
- **Tokens are estimated (UTF-8 bytes / 4), not counted with a vocabulary**: `tiktoken`
  downloads its vocabulary at first use, which fails offline, and the packages that ship
  one take 50 to 70 MiB of memory; against GPT-4o's vocabulary the estimate is 10-17% high
  on English.
- **`liz.twitter` loads its parts when first asked for**: twitter-text and the Twitter
  settings took 0.24 s of a 0.29 s `liz --help`.
- **uvloop and httptools are not used**: they sped the floor more than liz (liz's rate went
  from 0.70 to 0.64 of the floor's).
- **A reply's tool calls are written into later prompts by pydantic's serializer, and the
  stored messages read back by its JSON parser**: every turn formats and parses its last
  100 messages again; with half of them carrying a tool call, a tool turn's CPU over the
  floor of `bench/tools.py` went from 2.7 to 2.0 ms (medians of several runs).
- **LLM boundary: liz sends its own request bodies and reads whole answers itself**
  (`liz.llm.calls`, through the SDK's `client.post`), not through the SDK's typed calls.
  In the LLM boundary table the typed calls cost 0.6 ms of CPU more on a plain turn and
  1.9 to 2.6 ms more on a tool turn (the SDK walks every message through its parameter
  types before sending, and builds a pydantic object for every part of an answer), over
  the 0.5 ms a turn simplicity was allowed. They also send the messages before the tools,
  where providers' prefix caches want what every turn repeats first. The price is a
  fence: `openai` has an upper bound, and `tests/test_openai_wire_contract.py` checks
  every answer and chunk of the scripted model, built from the SDK's own types, against
  liz's reading. Streamed chunks are still parsed by the SDK (`ChatCompletionChunk`).
- **A turn is three spans, its chain steps events on the turn's span** (the OpenTelemetry
  GenAI conventions' grain), where it was ten spans, one per step. For the SDK alone such a
  turn costs 0.43 to 0.62 of one shaped the old way (the Tracing bench's last table). The server
  does not show it on this shared machine: the traced server spent 1.12 to 1.19 of the
  untraced one's CPU per turn over three runs, and a server of 17afadf, tracing ten spans a
  turn in the same runs, 1.15 to 1.16. Either way the official SDK misses the target (at
  most 5% of req/s with an exporter; 0.78 to 0.98 of the untraced req/s here): it builds a
  Python object for every span, event and attribute it encodes. Spans not sampled cost
  next to nothing, so sampling (`OTEL_TRACES_SAMPLER=parentbased_traceidratio`,
  docs/observability.md) is the lever: 10% sampled spent 1.03 of the untraced CPU per turn
  in two runs (0.93 and 0.98 of its req/s). The SDK's `start_as_current_span` costs 2.5 us a span
  more than liz's own scope did (8 us a turn), so liz uses it.
- **Export batches of 2048 spans** (unless an `OTEL_BSP_*` variable is set): with the
  SDK's 512, the traced server spent 1.16 of the untraced one's CPU per turn, against
  1.12 (one run, side by side).
- **What a traced turn's CPU is spent on** (py-spy of the traced server, 3,000 turns at
  16 in flight, one run): about 0.5 ms a turn over the untraced server's; of it, the SDK's
  calls made by liz's hooks (spans started and ended, events, attributes, context) about
  0.28 ms, the batch processor's thread (OTLP encoding, the HTTP export) about 0.24 ms,
  and liz's own observing code about 0.05 ms (1% of an untraced turn). The seven step
  events are the largest part liz decides: 110 of the 284 us the SDK spends on a turn's
  spans in-process (made 56, encoded 55); `liz.step.own_ms` is 6 us of it, so it stays.
  Over four runs of the Tracing bench beside a server of a2aa88e
  (`bench/observe.py --rounds 16 --compare` on a worktree of it; the table is the last),
  the traced server ran at 0.78 to 0.97 of the untraced req/s with 1.12 to 1.14 of its
  CPU, and a2aa88e's at 0.82 to 0.85 with 1.09 to 1.19: the same within the machine's
  noise, as expected, since what
  changed (a tool call observed once, the "Queue full" lines summed up) does not touch a
  plain turn. Sampling stays the lever.
- **This tree against 17afadf** (the section above): every req/s cell's median is within
  10% of 17afadf's (0.96 to 1.21), and the CPU per turn within 3% (0.98 to 1.03). The
  one cell below 0.95 in a run is PostgreSQL facts off (0.92 to 0.99). A py-spy of both
  servers found one cost 17afadf did not have: the agent's context drawn anew each turn
  from seven seeded generators and rendered (80 us a turn), now made once a day. 17afadf's
  server, facts on, failed 3 turns of about 1,800 on PostgreSQL in these runs with a
  deadlock between its two processes (in `create_memory`); this tree's none.
- **`/metrics` reads the learning backlog on a reading session**: on SQLite the writing
  one made a scrape wait for the process's one writing connection, behind the turns'
  writes: with 16 turns in flight, 35 ms at p50 and 104 at p95, against 16 and 24 (2,000
  users, one run each).
- **Counters carry no `_created` series**: they made a scrape of 10 agents' series 40 KB
  instead of 24, and its render 7.6 ms at p95 instead of 3.2 (in-process).
- **A chat bot shows "typing" only once an answer has taken a second** (as Telegram
  advises: only when an answer takes a noticeable time). A `sendChatAction` cost about
  as much CPU as the `sendMessage` after it, for an indicator gone before anyone could
  see it; with a real LLM most answers take longer, and still show it.
- **A chat bot's inbox and outbox go straight to the driver; a cycle reads the inbox
  once and the outbox only when a part may wait there**: through SQLAlchemy sessions,
  and read twice a cycle each, storing a read and reading the messages to answer and the
  parts to send took about a third of a Telegram message's CPU. **The bots also freeze
  their startup objects, as `liz serve` does**: a full collection walked some 200k
  objects. With the line above, in the Telegram table a message one at a time went from
  6.96 to 2.96 of an HTTP turn's CPU, in a burst from 4.54 to 1.73 (medians of three
  rounds; before and after each against the HTTP turns of its own run, one after the
  other).
- **A Telegram message cannot cost an HTTP turn's CPU within 10%**: python-telegram-bot's
  own `getUpdates` and `sendMessage` (the echo bot, no liz at all) cost about as much as
  the whole HTTP turn, request and response included. Taken out, a message one at a time
  costs 1.80 of an HTTP turn: the inbox and outbox notes that make it survive a crash
  (five hops to SQLite's thread: store the read, read what to answer, read what to
  send, note a send begun, note it done) and the event loop's share of the two calls.
- **The openai SDK stays the way to the LLM**, though its own layers cost about three times
  the HTTP request of an embedding (the One embeddings request table): it brings retries,
  authentication, Azure and proxy settings and a user's own `http_client`.
"""


def machine() -> str:
    cores = os.cpu_count() or 0
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        total = re.search(r"MemTotal:\s+(\d+) kB", meminfo.read_text())
        if total:
            memory = f", {int(total.group(1)) / 1024**2:.1f} GiB of memory"
    return (
        f"{cores} cores{memory}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}"
    )


def tables_of(output: str) -> str:
    """The Markdown tables a bench printed, each after the line introducing it."""
    lines = output.splitlines()
    found: list[tuple[str, list[str]]] = []
    index = 0
    while index < len(lines):
        if not lines[index].startswith("|"):
            index += 1
            continue
        start = index
        while index < len(lines) and lines[index].startswith("|"):
            index += 1
        rows = lines[start:index]
        caption = ""
        trailing = rows[0][rows[0].rfind("|") + 1 :].strip()
        if trailing:  # a note printed after the header row: "(20 runs)"
            rows[0] = rows[0][: rows[0].rfind("|") + 1]
            caption = trailing.strip("()") + " each:"
        before = next((line for line in reversed(lines[:start]) if line.strip()), "")
        if not caption and not before.startswith("|") and before.rstrip().endswith(":"):
            caption = before.strip()
        rows = [row.replace("<", "&lt;").replace(">", "&gt;") for row in rows]
        # Printed as it was measured, then again at the end: keep the last, with its caption.
        found = [(kept, table) for kept, table in found if table != rows]
        found.append((caption, rows))
    return "\n\n".join(
        "\n".join(([caption, ""] if caption else []) + rows) for caption, rows in found
    )


def run(bench: Bench) -> str:
    print(f"running bench/{bench.command} ...", flush=True)
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / bench.script), *bench.options.split()],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        sys.exit(f"bench/{bench.command} failed (exit {result.returncode}); the page is unchanged")
    return result.stdout


def section(bench: Bench, tables: str, when: str) -> str:
    start, end = SECTION_START.format(name=bench.name), SECTION_END.format(name=bench.name)
    body = tables or "No table: this bench printed none."
    return (
        f"{start}\n## {bench.title}\n\n{bench.what} (`bench/{bench.command}`; {when}.)\n\n"
        f"{body}\n{end}"
    )


def kept_section(page: str, bench: Bench) -> str | None:
    start, end = SECTION_START.format(name=bench.name), SECTION_END.format(name=bench.name)
    match = re.search(re.escape(start) + ".*?" + re.escape(end), page, re.DOTALL)
    return match.group(0) if match else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    names = [bench.name for bench in BENCHES]
    parser.add_argument("--only", nargs="+", choices=names, help="run only these benches")
    parser.add_argument("--from", dest="source", type=Path, help="read DIR/<bench>.txt")
    parser.add_argument("--date", default=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    parser.add_argument("--machine", default=machine(), help="the machine the run was on")
    parser.add_argument("--page", type=Path, default=PAGE, help="where to write the page")
    args = parser.parse_args()
    old = args.page.read_text(encoding="utf-8") if args.page.exists() else ""
    sections = []
    for bench in BENCHES:
        if args.only and bench.name not in args.only:
            kept = kept_section(old, bench)
            sections.append(kept or section(bench, "", "not run yet"))
            continue
        if args.source:
            output = (args.source / (bench.name.replace(".py", "", 1) + ".txt")).read_text()
        else:
            output = run(bench)
        sections.append(section(bench, tables_of(output), f"run {args.date}"))
    when = f"the run of {args.date}" if not args.only else "runs of several dates (each below)"
    page = (
        f"{INTRO}\nWritten from {when}, on {args.machine}. `make bench` runs them all "
        "(about 45 minutes); each bench also runs alone, with its own options "
        "(`--help`).\n\n" + "\n\n".join(sections) + "\n\n" + DECISIONS
    )
    args.page.write_text(page, encoding="utf-8")
    print(f"wrote {args.page}")


if __name__ == "__main__":
    main()
