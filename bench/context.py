"""Prompt tokens per turn over a 300-turn conversation: Liz's rule against LIZ_CONTEXT_TOKENS.

    .venv/bin/python bench/context.py                    # budget 4000 (the default), 300 turns
    .venv/bin/python bench/context.py --budget 2000 --turns 100

One user talks with the bundled business advisor through liz's standard chain, twice,
each time on a SQLite file of its own: with LIZ_CONTEXT_TOKENS=0 (Liz's rule: the last
100 messages, however long) and with the budget. The LLM is the scripted OpenAI-compatible
server, in process; it answers each turn with the agent's reply from the script, and the
bench counts what the server was sent for that reply (system prompt, previous
conversation, the character, the new message) in liz's estimated tokens (UTF-8 bytes / 4;
on English that is 10-17% above OpenAI's o200k count). Users mostly write a line or two,
sometimes a paragraph, now and then paste a page; the agent answers in a few sentences to
a few paragraphs. No facts are kept, so no <USER_FACTS> block is counted on either side.
"""

from __future__ import annotations

import argparse
import asyncio
import random
from pathlib import Path

from benchkit import markdown_table, scratch_folder

from liz.agents.business_advisor import create_agent
from liz.config import Settings
from liz.db.engine import create_engine
from liz.db.migrate import upgrade
from liz.prompts.tokens import estimate_tokens
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from liz.types import InputObject

SHOWN_TURNS = (1, 10, 50, 100, 150, 200, 250, 300)
USER_LINES = (
    "How do I know if I'm charging enough for my sourdough?",
    "We had a slow Tuesday again.",
    "My cousin says I should start selling online. Is that worth it?",
    "Thanks, that helps.",
    "What would you cut first if cash got tight?",
    "The oven broke down this morning, so we only had pastries.",
    "Should I take the stall at the Saturday market?",
    "I keep forgetting to track what sells out first.",
    "Ok. And what about hiring a part-time baker?",
    "Can you say that again in plain words?",
    "A regular asked whether we could do wedding cakes.",
    "My supplier wants payment up front from next month.",
)
USER_STORY = (
    "Last week was the busiest since we opened, mostly because of the street festival.",
    "We sold out of cinnamon buns before ten every day and turned people away at lunch.",
    "I worked six days straight and my partner covered the evenings with the kids.",
    "The landlord stopped by and mentioned the rent will go up by eight percent in spring.",
    "Flour is up again, and the dairy wants a one-year contract to keep the old price.",
    "Two of the students who help on weekends are leaving after the summer.",
    "A cafe two streets away asked whether we could supply them with bread every morning.",
    "They would pay less per loaf than our customers do, but it would be every single day.",
)
AGENT_SENTENCES = (
    "Start from what you already know sells, and let the numbers tell you where to push.",
    "Write down your cost per loaf, flour and butter and the hours at the oven included.",
    "If a product sells out every day, that is the market telling you the price is too low.",
    "Raise it a little, watch for two weeks, and only then decide whether to go further.",
    "Cash is what keeps a small shop alive, so keep three months of costs set aside.",
    "A wholesale order is steady money, but it only helps if it covers its share of rent.",
    "Before you hire, list the hours you would hand over and what they would free you for.",
    "A part-time baker on your busiest mornings may pay for themselves in the first month.",
    "Markets are a cheap way to test new products and meet people who never pass your door.",
    "Ask your regulars what they would miss if you stopped making it tomorrow.",
    "Say no to work that pulls you away from what makes you different.",
    "Put the numbers in a simple sheet you update every Friday, it takes ten minutes.",
    "Talk to the landlord early, a longer lease is often worth a smaller increase.",
    "Do not sign a supplier contract before you have compared at least two other offers.",
    "Your time is the scarcest thing you have, so price it into everything you sell.",
    "Try it for a month, then look back at what changed and decide with real figures.",
)


def user_message(rng: random.Random) -> str:
    """Mostly a line or two; sometimes a paragraph; now and then a pasted page."""
    kind = rng.random()
    if kind < 0.7:
        return " ".join(rng.sample(USER_LINES, rng.randint(1, 2)))
    if kind < 0.95:
        return " ".join(rng.sample(USER_STORY, rng.randint(3, 6)))
    page = [" ".join(rng.choices(USER_STORY, k=5)) for _ in range(rng.randint(4, 8))]
    return "Here is what I wrote down for my accountant:\n\n" + "\n\n".join(page)


def agent_reply(rng: random.Random) -> str:
    """A few sentences to a few paragraphs."""
    paragraphs = rng.randint(1, 4)
    return "\n\n".join(
        " ".join(rng.sample(AGENT_SENTENCES, rng.randint(2, 5))) for _ in range(paragraphs)
    )


def conversation(turns: int, seed: int = 10) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [(user_message(rng), agent_reply(rng)) for _ in range(turns)]


async def prompt_tokens(
    database: Path, budget: int, exchanges: list[tuple[str, str]]
) -> list[tuple[int, int]]:
    """(estimated tokens, earlier messages shown) of each turn's prompt, run on `database`."""
    url = f"sqlite+aiosqlite:///{database}"
    upgrade(url)
    settings = Settings(_env_file=None, database_url=url, liz_context_tokens=budget)  # type: ignore[call-arg]
    scripted = ScriptedOpenAI()
    engine = create_engine(url)
    llm = scripted.llm_client()
    runtime = Runtime(settings=settings, engine=engine, llm_client=llm)
    framework = build_framework(runtime)
    agent = create_agent()
    counts = []
    try:
        for said, answer in exchanges:
            scripted.reply(answer)
            message = InputObject(agent_id=agent.agent_id, user_id="ann", text=said)
            res = await framework.process(message, agent)
            if res.reply is None:
                raise RuntimeError(f"the turn failed: {res.error}")
            prompt = scripted.chat_requests[-1].prompt
            counts.append((estimate_tokens(prompt), messages_shown(prompt)))
    finally:
        await runtime.background.drain()
        await llm.close()
        await engine.dispose()
    return counts


def messages_shown(prompt: str) -> int:
    """Earlier messages in the prompt: each is shown as `You (... UTC): ` or `User ann (...`."""
    conversation = prompt.partition("<PREVIOUS_CONVERSATION>")[2]
    return conversation.partition("</PREVIOUS_CONVERSATION>")[0].count(" UTC): ")


def report(liz_rule: list[tuple[int, int]], budgeted: list[tuple[int, int]], budget: int) -> str:
    rows = []
    for turn in (turn for turn in SHOWN_TURNS if turn <= len(liz_rule)):
        (full, all_shown), (kept, kept_shown) = liz_rule[turn - 1], budgeted[turn - 1]
        cells = [f"{full:,} ({all_shown})", f"{kept:,} ({kept_shown})", f"{kept / full:.2f}"]
        rows.append([str(turn), *cells])
    total_full = sum(tokens for tokens, _ in liz_rule)
    total_kept = sum(tokens for tokens, _ in budgeted)
    rows.append(
        [
            f"**all {len(liz_rule)} turns**",
            f"**{total_full:,}**",
            f"**{total_kept:,}**",
            f"**{total_kept / total_full:.2f}**",
        ]
    )
    header = ["turn", "Liz: last 100 messages", f"liz: LIZ_CONTEXT_TOKENS={budget}", "ratio"]
    return markdown_table(header, rows)


async def run(turns: int, budget: int) -> None:
    exchanges = conversation(turns)
    with scratch_folder("liz-bench-context-") as folder:
        liz_rule = await prompt_tokens(folder / "liz-rule.db", 0, exchanges)
        budgeted = await prompt_tokens(folder / "budget.db", budget, exchanges)
    print(
        f"Prompt tokens per turn (estimated; earlier messages shown in brackets), "
        f"{turns} turns, system prompt included:\n"
    )
    print(report(liz_rule, budgeted, budget))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    default_budget = Settings.model_fields["liz_context_tokens"].default
    parser.add_argument("--budget", type=int, default=default_budget)
    args = parser.parse_args()
    asyncio.run(run(args.turns, args.budget))


if __name__ == "__main__":
    main()
