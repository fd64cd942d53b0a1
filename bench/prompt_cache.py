"""What a provider's prompt cache serves of each reply prompt: a reference layout against this one.

    .venv/bin/python bench/prompt_cache.py                     # 80 turns, reference: main
    .venv/bin/python bench/prompt_cache.py --turns 30 --reference <commit>

One user talks with an agent through liz's standard chain, facts on, against the scripted
model (in process, over the real ``openai`` SDK), on a virtual clock and a SQLite file of
its own. The agent's character renders to about 1,700 estimated tokens with its tool and
system prompt. Two conversations, both longer than ``LIZ_CONTEXT_TOKENS``: a chat (the
user writes a line or two, the agent answers in one to three sentences; it outgrows the
budget after about 45 turns) and bench/context.py's long messages (a line or two,
sometimes a paragraph, now and then a pasted page, answered in a few sentences to a few
paragraphs; it outgrows the budget within about 15 turns, and each turn adds about a
tenth of a prompt, which no cache can serve). Learning runs right after each reply, so
every turn recalls what the earlier ones taught.

Each conversation is driven twice, each run in a process of its own: once on the
reference commit's code (by default ``main``; checked out in a temporary ``git
worktree`` and put first on ``PYTHONPATH``), once on this tree's. Then every chat request
of a run goes, in order, through liz.testing.prompt_cache's OpenAI-style prefix cache
(per model; the longest prefix shared with an earlier request, in 128-token steps, from
1,024 tokens; four bytes a token). Printed, for the reply prompts of turns 2 and later
with at least 1,024 tokens: the median share the cache serves, the mean, the router's
median, the billed input per turn at three of OpenAI's price pairs (input, cached input;
USD per million tokens), and in how many turns the prompt showed the same recalled facts
as the reference's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchkit import BENCH, markdown_table, scratch_folder
from context import AGENT_SENTENCES, USER_LINES, conversation

from liz.agent import BaseAgent
from liz.character import Character
from liz.config import Settings
from liz.db.migrate import upgrade_async
from liz.facts.settings import FactSettings
from liz.learning_queue.settings import LearningSettings
from liz.routes import Route, converse
from liz.routes import conversation as conversation_route
from liz.runtime.bootstrap import build_framework, open_runtime
from liz.testing.clock import ManualClock
from liz.testing.openai_requests import Answer, RecordedRequest
from liz.testing.openai_server import ScriptedOpenAI
from liz.testing.scripted_model import answer
from liz.types import InputObject

# OpenAI's published prices, USD per million tokens: (input, cached input).
PRICES = {
    "gpt-5": (1.25, 0.125),
    "gpt-4.1": (2.00, 0.50),
    "gpt-4o": (2.50, 1.25),
}
TARGET_MODEL = "gpt-5"
AGENT = "bakery-mentor"
SYSTEM = (
    "You are Mara Lindqvist, a mentor for owners of small food businesses: bakeries, "
    "cafes, market stalls and the people who run them with too little time. You have run "
    "a bakery for twenty years and advised more than a hundred others. Your job in this "
    "conversation is to help one owner make better decisions about money, people, "
    "products and time, one decision at a time.\n\n"
    "How you work:\n"
    "1. Start from the owner's own numbers. When they are missing, ask for the one number "
    "that matters most for the decision at hand, and say why it matters.\n"
    "2. Prefer small reversible experiments to big bets: a price change for two weeks, a "
    "new product on Saturdays only, a trial shift before a hire.\n"
    "3. Name the trade-off in every recommendation: what the owner gains, what it costs "
    "them in cash, hours and attention, and what would tell them it is not working.\n"
    "4. Keep cash in view. A profitable bakery can still run out of money; when an idea "
    "ties up cash (stock, deposits, equipment, wholesale terms), say how much and for how "
    "long.\n"
    "5. Respect the owner's limits. They have families, health and a life outside the "
    "shop; a plan that needs seven days a week is not a plan.\n"
    "6. Be concrete. Give figures, steps and a date to look back at the result, not "
    "slogans. If you are unsure, say so and say what would settle it.\n"
    "7. Remember what the owner told you before and build on it; do not ask again for "
    "what they already said.\n\n"
    "What you do not do: you do not give legal or tax advice beyond pointing to the kind "
    "of professional to ask; you do not recommend debt without a repayment plan written in "
    "numbers; you do not judge the owner for past decisions; you do not invent facts about "
    "their business. When a question is outside small food businesses, say so briefly and "
    "bring the conversation back to their shop.\n\n"
    "Tone: warm, direct and practical, like an experienced friend at the counter after "
    "closing time. Short paragraphs. No lists longer than five items unless asked. Use the "
    "owner's own words for their products and places."
)


def character_fields() -> dict[str, Any]:
    """The bench agent's character: about 1,700 estimated tokens as a prompt renders it."""

    def example(question: str, answer: str) -> list[dict[str, Any]]:
        return [
            {"user": "{{user1}}", "content": {"text": question}},
            {"user": "Mara", "content": {"text": answer}},
        ]

    return {
        "agentId": AGENT,
        "name": "Mara",
        "system": SYSTEM,
        "bio": [
            "Ran a neighbourhood bakery in Gothenburg for twenty years, from one oven to three.",
            "Advised more than a hundred small food businesses on pricing, staffing and cash.",
            "Started out as a night baker and still bakes on Saturday mornings.",
            "Teaches an evening course on bookkeeping for people who hate bookkeeping.",
            "Sold her own bakery to two of her former apprentices on a five-year plan.",
            "Keeps a notebook of every price change she ever made and what it did to sales.",
        ],
        "lore": [
            "Once kept a shop alive through a road closure by selling bread from a bicycle.",
            "Believes the cinnamon bun is the best-priced product in most Swedish bakeries.",
            "Refused a supermarket contract that would have doubled her volume and halved "
            "her margin; the bakery that took it closed within two years.",
            "Has a rule that no new product goes on the shelf without a cost sheet.",
            "Learned to read a profit and loss statement from her grandmother's shop ledgers.",
            "Kept the same flour supplier for fifteen years by paying on time, every time.",
            "Ran the first bakery in her street to close on Mondays, and made more money.",
            "Hired her best baker after a two-hour trial shift that started at four in the "
            "morning.",
        ],
        "messageExamples": [
            example(
                "Should I raise my prices? Everyone around here is cheaper.",
                "Maybe. First tell me which three products sell out before noon. Those are "
                "where your customers already tell you the price is low. Raise those by five "
                "percent for two weeks and count what you sell; if the count holds, keep it.",
            ),
            example(
                "I want to hire someone but I am scared of the cost.",
                "Write down the hours you would hand over and what you would do with them. "
                "If those hours go to baking more of what sells out, a part-time baker can "
                "pay for themselves. If they go to rest, that is worth it too, but budget it "
                "as rest, not as growth.",
            ),
            example(
                "A cafe wants to buy our bread wholesale.",
                "Good news, if the numbers work. Wholesale usually pays thirty to forty "
                "percent less per loaf, so work out your cost per loaf with flour, butter, "
                "energy and your hours. If the wholesale price leaves less than a fifth of "
                "it as margin, ask for more or for a smaller, steadier order.",
            ),
            example(
                "Cash is tight this month.",
                "Then let us look at the next eight weeks, not the next eight months. List "
                "every payment due and every sure income. Where is the first week the "
                "balance goes below one week of costs? That is the week we plan for.",
            ),
        ],
        "postExamples": [
            "Your best-selling product is telling you something about your prices. Listen.",
            "A cost sheet for every product. Boring, and the cheapest advice you will get.",
            "Closing one day a week can make a bakery more money. Ask me how.",
        ],
        "topics": ["pricing", "cash flow", "hiring", "wholesale", "suppliers", "markets"],
        "adjectives": ["warm", "direct", "practical", "patient", "numerate"],
        "style": {
            "all": [
                "short paragraphs",
                "concrete numbers over general advice",
                "the owner's own words for their products",
            ],
            "chat": ["answer the question first, then ask at most one question back"],
            "post": ["one idea per post"],
        },
    }


def cash_runway(cash: float, monthly_costs: float) -> str:
    """How many months the cash lasts at the current monthly costs.

    Args:
        cash: Money in the bank today, in euros.
        monthly_costs: Everything paid out in a month: rent, wages, flour, energy.
    """
    return f"{cash / monthly_costs:.1f} months" if monthly_costs > 0 else "no costs given"


# -- one run, in the process of the code it measures --------------------------------------


def chat(turns: int, seed: int = 10) -> list[tuple[str, str]]:
    """A chat: the user writes a line or two, the agent answers in one to three sentences."""
    rng = random.Random(seed)
    return [
        (
            " ".join(rng.sample(USER_LINES, rng.randint(1, 2))),
            " ".join(rng.sample(AGENT_SENTENCES, rng.randint(1, 3))),
        )
        for _ in range(turns)
    ]


CONVERSATIONS = {"chat": chat, "long messages": conversation}


async def drive(talk: str, turns: int, budget: int, out: Path) -> None:
    """Talk ``turns`` turns on the importable liz; write every chat request to ``out``."""
    exchanges = CONVERSATIONS[talk](turns)
    reply_now = [""]
    clock = ManualClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))

    async def respond(request: RecordedRequest) -> Answer:
        if purpose(request.body) == "reply":
            # The reply is stored after the message it answers, as with a real model.
            await clock.advance(seconds=20)
            return reply_now[0]
        return answer(request)  # the router, extraction and reconcile: the scripted model

    scripted = ScriptedOpenAI(embedding_dim=256)
    scripted.respond_with(respond)
    url = f"sqlite+aiosqlite:///{out.with_suffix('.db')}"
    await upgrade_async(url)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        liz_context_tokens=budget,
        facts=FactSettings(_env_file=None),  # type: ignore[call-arg]
        # Learned right after each reply, so each turn recalls what the earlier ones taught.
        learning=LearningSettings(  # type: ignore[call-arg]
            _env_file=None, worker=False, quiet_seconds=0, learn_after_idle=0
        ),
    )
    agent = BaseAgent(Character.model_validate(character_fields()))
    agent.add_route(conversation_route)
    # A second route, so every turn also asks the router, as most real agents do.
    agent.add_route(Route(name="advice", description="Give practical advice.", handler=converse))
    agent.add_tool(cash_runway)
    requests: list[dict[str, Any]] = []
    async with (
        scripted.llm_client() as llm,
        open_runtime(settings, llm_client=llm, clock=clock) as rt,
    ):
        framework = build_framework(rt)
        for turn, (said, reply) in enumerate(exchanges, start=1):
            reply_now[0] = reply
            await clock.advance(seconds=70)
            before = len(scripted.requests)
            message = InputObject(agent_id=AGENT, user_id="ann", room_id="room-ann", text=said)
            res = await framework.process(message, agent)
            if res.reply is None:
                raise RuntimeError(f"turn {turn} failed: {res.error}")
            async with asyncio.timeout(60):
                while rt.background.pending:  # learning, right after the reply
                    await asyncio.sleep(0.005)
            for request in scripted.requests[before:]:
                if request.path.endswith("/chat/completions"):
                    requests.append({"turn": turn, "body": request.body})
    out.write_text(json.dumps({"requests": requests}))


def purpose(body: dict[str, Any]) -> str:
    """reply, route, or learn (extraction and reconcile) for a chat request's body."""
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    if name == "RouteChoice":
        return "route"
    if name is None and "<CURRENT_USER_INPUT>" in json.dumps(body.get("messages")):
        return "reply"
    return "learn"


# -- the comparison ------------------------------------------------------------------------


def run_on(code: Path, talk: str, turns: int, budget: int, out: Path) -> list[dict[str, Any]]:
    """This script's ``--drive`` on the liz at ``code``; the chat requests it made."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    command = [sys.executable, str(Path(__file__).resolve()), "--drive", str(out)]
    command += ["--conversation", talk, "--turns", str(turns), "--budget", str(budget)]
    subprocess.run(command, check=True, env=env, cwd=code)
    requests: list[dict[str, Any]] = json.loads(out.read_text())["requests"]
    return requests


def measured(requests: list[dict[str, Any]]) -> dict[str, Any]:
    """Each reply's prompt and cached tokens, through one prefix cache, in order."""
    # Only here: the reference's code, which the driver runs on, may not have it.
    from liz.testing.prompt_cache import PrefixCache, prompt_tokens

    cache = PrefixCache()
    replies: dict[int, tuple[int, int]] = {}
    routes: dict[int, tuple[int, int]] = {}
    facts: dict[int, list[str]] = {}
    for request in requests:
        body = request["body"]
        cached = cache.cached_tokens(body["model"], body)
        kind = purpose(body)
        if kind == "reply" and request["turn"] not in replies:
            replies[request["turn"]] = (prompt_tokens(body), cached)
            facts[request["turn"]] = recalled(body)
        elif kind == "route":
            routes[request["turn"]] = (prompt_tokens(body), cached)
    return {"replies": replies, "routes": routes, "facts": facts}


def recalled(body: dict[str, Any]) -> list[str]:
    """The facts listed in the prompt's <USER_FACTS> block."""
    text = "\n".join(str(m.get("content")) for m in body["messages"])
    block = text.partition("<USER_FACTS>")[2].partition("</USER_FACTS>")[0]
    return [line[2:] for line in block.splitlines() if line.startswith("- ")]


def counted(tokens: dict[int, tuple[int, int]]) -> list[tuple[int, int]]:
    """Turns 2 and later whose prompt has at least 1,024 tokens."""
    return [pair for turn, pair in sorted(tokens.items()) if turn >= 2 and pair[0] >= 1024]


def billed(pairs: list[tuple[int, int]], model: str) -> float:
    """Mean input cost per turn, USD."""
    price, cached_price = PRICES[model]
    costs = [((total - cached) * price + cached * cached_price) / 1e6 for total, cached in pairs]
    return statistics.mean(costs)


def report(runs: dict[str, tuple[dict[str, Any], dict[str, Any]]], reference: str) -> str:
    """One row per conversation and layout, and the ratio of the billed input."""
    header = ["conversation", "layout", "turns counted", "reply prompt (tokens)"]
    header += ["median share cached", "mean share cached", "router: median share"]
    header += [f"billed input /1k turns, {m} (${p[0]}, ${p[1]})" for m, p in PRICES.items()]
    header += ["recall: turns with the same facts"]
    rows = []
    for talk, (old, new) in runs.items():
        for layout, run in ((f"reference ({reference})", old), ("this tree", new)):
            pairs = counted(run["replies"])
            shares = [cached / total for total, cached in pairs]
            routes = [cached / total for total, cached in counted(run["routes"])]
            cells = [talk, layout, str(len(pairs)), f"{statistics.mean(t for t, _ in pairs):,.0f}"]
            cells += [f"{statistics.median(shares):.3f}", f"{statistics.mean(shares):.3f}"]
            cells += [f"{statistics.median(routes):.3f}"]
            cells += [f"${billed(pairs, model) * 1000:.3f}" for model in PRICES]
            cells += [same_recall(old, new) if run is new else ""]
            rows.append(cells)
        before, after = counted(old["replies"]), counted(new["replies"])
        ratios = [billed(after, model) / billed(before, model) for model in PRICES]
        rows.append([talk, "**ratio**", "", "", "", "", "", *(f"**{r:.2f}**" for r in ratios), ""])
    return markdown_table(header, rows)


def same_recall(old: dict[str, Any], new: dict[str, Any]) -> str:
    """In how many turns the prompt showed the reference's recalled facts, and how many."""
    same = sum(old["facts"].get(turn) == facts for turn, facts in new["facts"].items())
    shown = sum(len(facts) for facts in new["facts"].values())
    return f"{same} of {len(new['facts'])} ({shown} facts shown)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=80)
    parser.add_argument("--budget", type=int, default=4000, help="LIZ_CONTEXT_TOKENS")
    parser.add_argument("--reference", default="main", help="the commit whose layout to compare")
    parser.add_argument("--conversation", choices=list(CONVERSATIONS), help=argparse.SUPPRESS)
    parser.add_argument("--drive", type=Path, help=argparse.SUPPRESS)  # one run, this process
    args = parser.parse_args()
    if args.drive is not None:
        asyncio.run(drive(args.conversation or "chat", args.turns, args.budget, args.drive))
        return
    tree = BENCH.parent
    commit = subprocess.run(
        ["git", "rev-parse", "--short", args.reference],
        cwd=tree,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    runs = {}
    with scratch_folder("liz-bench-prompt-cache-") as folder:
        reference = folder / "reference"
        git = ["git", "-C", str(tree), "worktree"]
        subprocess.run([*git, "add", "--quiet", "--detach", str(reference), commit], check=True)
        try:
            for number, talk in enumerate(CONVERSATIONS):
                old = run_on(
                    reference, talk, args.turns, args.budget, folder / f"old-{number}.json"
                )
                new = run_on(tree, talk, args.turns, args.budget, folder / f"new-{number}.json")
                runs[talk] = (measured(old), measured(new))
        finally:
            subprocess.run([*git, "remove", "--force", str(reference)], check=True)
    print(
        f"Reply prompts over {args.turns} turns, LIZ_CONTEXT_TOKENS={args.budget}, the "
        "scripted model, facts on; shares an OpenAI-style prefix cache serves:\n"
    )
    print(report(runs, commit))


if __name__ == "__main__":
    main()
