"""What learning facts costs per turn: learning after each reply against learning per
conversation burst, side by side, on one replayed conversation.

    .venv/bin/python bench/learning_cost.py              # idle 30 s, the default
    .venv/bin/python bench/learning_cost.py --idle 60
    .venv/bin/python bench/learning_cost.py --mem0-venv /tmp/mem0-venv   # keep mem0's venv
    .venv/bin/python bench/learning_cost.py --no-mem0

Four users talk at once, messages seconds apart, hours between their conversations
(bench/learning_conversation.py); they state facts, repeat them and contradict them.
Each mode replays it on a virtual clock (ManualClock) against the scripted model over
the real ``openai`` SDK, with a fresh SQLite file, the standard chain and an agent with
two routes. Per burst, the clock stops at each beat where a burst is due (the first beat
once its user has been quiet the idle time: liz.learning_queue.beats), so the bursts of
users due at the same beat share one embeddings request, as they would in a process.
Printed: LLM requests per turn by purpose, prompt tokens per turn, each user's final
active facts. Exits 1 when the two modes end with different active facts.

Beside them, mem0 (in a throwaway venv, bench/mem0_driver.py): one ``Memory.add`` with
``infer=True`` per turn, of the turn's exchange (the user's message and the reply), with
its OpenAI LLM and embedder pointed at the same scripted model over loopback HTTP and
its local Qdrant in a temporary folder. mem0 answers no turn, so it makes no reply,
route or recall request; every embeddings request its ``add`` makes counts as learning.
Plain ``mem0ai`` is installed, without its ``nlp`` extra (spaCy), so its ``add`` links no
entities: with it, an ``add`` that stores memories makes one more embeddings request.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchkit import markdown_table, mem0_process, mem0_venv
from learning_conversation import CONVERSATIONS, REPLY, answer, answer_mem0, timeline

from liz.agent import BaseAgent
from liz.character import Character
from liz.config import Settings
from liz.db.migrate import upgrade_async
from liz.facts.settings import FactSettings
from liz.learning_queue.beats import learn_at
from liz.learning_queue.settings import LearningSettings
from liz.routes import Route, conversation, converse
from liz.runtime.bootstrap import build_framework, open_runtime
from liz.runtime.services import Runtime
from liz.testing.clock import ManualClock
from liz.testing.openai_requests import RecordedRequest
from liz.testing.openai_server import ScriptedOpenAI
from liz.testing.openai_wire import word_count
from liz.types import InputObject

AGENT = "ada-bot"
PURPOSES = ("reply", "route", "extract", "reconcile", "embed: recall", "embed: learning")
LEARNING = ("extract", "reconcile")


@dataclass
class Outcome:
    mode: str
    turns: int
    calls: Counter[str]
    prompt_tokens: Counter[str]
    facts: dict[str, list[str]]
    retired: dict[str, list[str]]  # no longer true, kept in history
    absent: frozenset[str] = frozenset()  # purposes the mode never asks for


def purpose(request: RecordedRequest) -> str:
    if request.path.endswith("/embeddings"):
        texts = request.body.get("input")
        texts = texts if isinstance(texts, list) else [texts]
        # Learning embeds facts ("User ..."); recall embeds what the user just said.
        learned = all(isinstance(t, str) and t.startswith("User") for t in texts)
        return "embed: learning" if learned else "embed: recall"
    return {"RouteChoice": "route", "ExtractedFacts": "extract", "ReconcilePlan": "reconcile"}.get(
        request.schema_name or "", "reply"
    )


async def settled(rt: Runtime, *, gathering: int) -> None:
    """Wait (real time) until the only background work left is the bursts still
    gathering: what was due has been learned before the clock moves on."""
    async with asyncio.timeout(60):
        while rt.background.pending > gathering:
            await asyncio.sleep(0.005)


def make_agent() -> BaseAgent:
    agent = BaseAgent(Character(agent_id=AGENT, name="Ada", system="You are Ada, a kind helper."))
    agent.add_route(conversation)
    # A second route, so every turn also asks the router, as most real agents do.
    agent.add_route(Route(name="advice", description="Give practical advice.", handler=converse))
    return agent


async def replay(mode: str, idle: float, folder: Path) -> Outcome:
    scripted = ScriptedOpenAI(embedding_dim=256)
    scripted.respond_with(answer)
    url = f"sqlite+aiosqlite:///{folder / (mode.replace(' ', '-') + '.db')}"
    await upgrade_async(url)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        facts=FactSettings(_env_file=None),  # type: ignore[call-arg]
        # No poller: every learning round here starts from a turn or from the stop.
        learning=LearningSettings(  # type: ignore[call-arg]
            _env_file=None, worker=False, quiet_seconds=0, learn_after_idle=idle
        ),
    )
    clock = ManualClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    agent = make_agent()
    now = 0.0
    async with (
        scripted.llm_client() as llm,
        open_runtime(settings, llm_client=llm, clock=clock) as rt,
    ):
        framework = build_framework(rt)
        start = clock.now()

        def learned_at(said_at: float) -> float:
            """When a burst whose newest message came then is learned (at its beat)."""
            at = learn_at(start + timedelta(seconds=said_at), idle)
            return (at - start).total_seconds()

        due: dict[str, float] = {}  # when each user's burst is learned, while it gathers
        for at, user, text in timeline():
            for beat in sorted({d for d in due.values() if d <= at}):
                await clock.advance(seconds=beat - now)  # the bursts due at the beat are learned
                now = beat
                due = {u: d for u, d in due.items() if d > now}
                await settled(rt, gathering=len(due))
            await clock.advance(seconds=at - now)
            now = at
            said = InputObject(agent_id=AGENT, user_id=user, room_id=f"room-{user}", text=text)
            await framework.process(said, agent)
            due[user] = learned_at(at)
            due = {u: d for u, d in due.items() if d > now}
            await settled(rt, gathering=len(due))
        await clock.advance(seconds=max(due.values(), default=now) - now)
        await rt.background.drain()
        assert rt.facts is not None
        facts: dict[str, list[str]] = {}
        retired: dict[str, list[str]] = {}
        for user in CONVERSATIONS:
            every = await rt.facts.list(AGENT, user, include_retired=True)
            facts[user] = sorted(f.text for f in every if f.retired_at is None)
            retired[user] = sorted(f.text for f in every if f.retired_at is not None)
    calls: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    for request in scripted.requests:
        kind = purpose(request)
        calls[kind] += 1
        if not kind.startswith("embed"):
            tokens[kind] += word_count(request.prompt)
    return Outcome(mode, len(timeline()), calls, tokens, facts, retired)


def run_mem0(venv: Path, folder: Path) -> Outcome:
    """mem0's ``add`` (``infer=True``) once per turn, against the scripted model."""
    scripted = ScriptedOpenAI(embedding_dim=256)
    scripted.respond_with(answer_mem0)
    turns = [[user, text, REPLY] for _, user, text in timeline()]
    with scripted.serve() as base_url, mem0_process(venv, folder) as ask:
        version = ask(op="open", base_url=base_url, dim=256, folder=str(folder))["version"]
        memories = ask(op="learn", turns=turns)["memories"]
    if not all(memories.get(user) for user in CONVERSATIONS):
        # Every user states facts: an empty list means mem0 asked what answer_mem0 does not
        # answer (another version's prompts) and carried on, so its counts would mislead.
        raise SystemExit(f"mem0 {version} kept no memory for some user; see {folder / 'mem0.log'}")
    calls: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    for request in scripted.requests:
        kind = "embed: learning" if request.path.endswith("/embeddings") else "extract"
        calls[kind] += 1
        if kind == "extract":
            tokens[kind] += word_count(request.prompt)
    absent = frozenset(("reply", "route", "embed: recall"))
    empty: dict[str, list[str]] = {user: [] for user in CONVERSATIONS}
    facts = {**empty, **memories}
    return Outcome(f"mem0 {version} add", len(turns), calls, tokens, facts, empty, absent)


def table(outcomes: list[Outcome]) -> str:
    header = ["mode", *(f"{p} /turn" for p in PURPOSES), "learning calls /turn"]
    header += ["learning prompt tokens /turn", "all prompt tokens /turn"]
    rows = []
    for o in outcomes:
        per = ["—" if p in o.absent else f"{o.calls[p] / o.turns:.2f}" for p in PURPOSES]
        learning = sum(o.calls[p] for p in LEARNING) / o.turns
        learning_tokens = sum(o.prompt_tokens[p] for p in LEARNING) / o.turns
        every = "—" if o.absent else f"{sum(o.prompt_tokens.values()) / o.turns:.0f}"
        rows.append([o.mode, *per, f"{learning:.2f}", f"{learning_tokens:.0f}", every])
    return markdown_table(header, rows)


def targets(each: Outcome, burst: Outcome) -> list[tuple[str, bool]]:
    learning = sum(burst.calls[p] for p in LEARNING) / burst.turns
    embeds = burst.calls["embed: learning"] / burst.turns
    tokens = [sum(o.prompt_tokens[p] for p in LEARNING) / o.turns for o in (each, burst)]
    embedded = ("embed: recall", "embed: learning")
    every = [sum(o.calls[p] for p in embedded) / o.turns for o in (each, burst)]
    return [
        (f"learning LLM calls per turn {learning:.2f} <= 0.3", learning <= 0.3),
        (f"learning embedding requests per turn {embeds:.2f} <= 0.1", embeds <= 0.1),
        (
            f"all embedding requests per turn {every[1]:.2f} <= the recall query's 1 + 0.1 "
            f"(per message {every[0]:.2f})",
            every[1] <= 1.1,
        ),
        (
            f"learning prompt tokens per turn {tokens[1]:.0f} <= half of {tokens[0]:.0f}",
            tokens[1] * 2 <= tokens[0],
        ),
        ("the same final active facts for every user", each.facts == burst.facts),
    ]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--idle", type=float, default=30.0, help="LIZ_LEARN_AFTER_IDLE of the burst mode"
    )
    parser.add_argument("--no-mem0", action="store_true", help="count liz's two modes only")
    parser.add_argument("--mem0-venv", type=Path, help="reuse (or keep) mem0's venv here")
    args = parser.parse_args()
    mem0: Outcome | None = None
    with tempfile.TemporaryDirectory(prefix="liz-learning-cost-") as folder:
        each = await replay("per message (idle 0)", 0.0, Path(folder))
        burst = await replay(f"per burst (idle {args.idle:g} s)", args.idle, Path(folder))
        if not args.no_mem0:
            venv = mem0_venv(Path(folder), args.mem0_venv)
            (Path(folder) / "mem0").mkdir()
            mem0 = await asyncio.to_thread(run_mem0, venv, Path(folder) / "mem0")
    bursts = burst.calls["extract"]
    print(
        f"{each.turns} turns, {len(CONVERSATIONS)} users, messages seconds apart; "
        f"{bursts} bursts learned, {each.turns / max(bursts, 1):.1f} messages each:\n"
    )
    print(table([each, burst] if mem0 is None else [each, burst, mem0]))
    print("\nAgainst the targets:\n")
    rows = [[line, "met" if met else "missed"] for line, met in targets(each, burst)]
    print(markdown_table(["per burst", "target"], rows))
    print("\nFinal active facts (per burst), and those kept in history only:")
    for user in CONVERSATIONS:
        print(f"  {user}: {'; '.join(burst.facts[user])}")
        if each.facts[user] != burst.facts[user]:
            print(f"  {user}, per message instead: {'; '.join(each.facts[user])}")
        print(f"  {user}, history: {'; '.join(burst.retired[user])}")
        if each.retired[user] != burst.retired[user]:
            print(f"  {user}, history per message: {'; '.join(each.retired[user])}")
        if mem0 is not None:
            print(f"  {user}, mem0's memories: {'; '.join(mem0.facts[user])}")
    return 0 if each.facts == burst.facts else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
