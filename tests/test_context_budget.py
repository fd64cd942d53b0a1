"""LIZ_CONTEXT_TOKENS: the prompt keeps the newest messages that fit; the oldest go first,
in steps: the window keeps its first message for many turns, so the provider's prompt
cache serves the conversation too."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.agent import BaseAgent
from liz.config import Settings
from liz.db.engine import create_engine
from liz.db.memories import insert_memory
from liz.errors import UsageError
from liz.facts.store import FactStore
from liz.llm import LLMClient
from liz.middleware import load_memories
from liz.prompts.tokens import estimate_tokens
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.clock import ManualClock
from liz.testing.openai_requests import RecordedRequest
from liz.testing.openai_server import ScriptedOpenAI
from liz.types import Generator, InputObject, Memory
from tests.fixtures.facts import extraction, fact, seed
from tests.serve_process import run_liz

on_sqlite = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
# About 100 estimated tokens a message, so a budget of a few hundred holds a few.
FILLER = " and then we talked about the bakery, the rent and the Saturday market" * 5

Ask = Callable[..., Awaitable[str]]  # (budget, text, facts=None) -> the prompt


def said(number: int) -> str:
    return f"message-{number:03d}{FILLER}"


def section(prompt: str, name: str) -> str:
    return prompt.split(f"<{name}>", 1)[1].split(f"</{name}>", 1)[0]


def shown(prompt: str, earlier: int) -> list[int]:
    """Which of the earlier messages the prompt's previous conversation shows."""
    conversation = section(prompt, "PREVIOUS_CONVERSATION")
    return [number for number in range(earlier) if f"message-{number:03d}" in conversation]


def memory(agent: BaseAgent, number: int, text: str, generator: Generator) -> Memory:
    return Memory(
        user_id="ada",
        agent_id=agent.agent_id,
        room_id="room-1",
        type="text",
        generator=generator,
        content={"text": text},
        created_at=START + timedelta(minutes=number),
    )


async def remember(
    sessions: async_sessionmaker[AsyncSession], agent: BaseAgent, *texts: str
) -> None:
    """Store an earlier conversation, oldest first: the user and the agent taking turns."""
    async with sessions() as session, session.begin():
        for number, text in enumerate(texts):
            generator: Generator = "external" if number % 2 == 0 else "llm"
            await insert_memory(session, memory(agent, number, text, generator))


@pytest.fixture
def ask(
    database_url: str,
    engine: AsyncEngine,
    llm: LLMClient,
    scripted: ScriptedOpenAI,
    agent: BaseAgent,
) -> Ask:
    """Send ``text`` through the standard chain with LIZ_CONTEXT_TOKENS=budget; the prompt."""

    async def ask(budget: int, text: str, facts: FactStore | None = None) -> str:
        settings = Settings(_env_file=None, database_url=database_url, liz_context_tokens=budget)  # type: ignore[call-arg]
        runtime = Runtime(settings=settings, engine=engine, llm_client=llm, facts=facts)
        asked = len(scripted.chat_requests)
        scripted.reply("Sure.")
        message = InputObject(agent_id=agent.agent_id, user_id="ada", room_id="room-1", text=text)
        res = await build_framework(runtime).process(message, agent)
        await runtime.background.drain()
        assert res.reply is not None, res.error
        (reply,) = [r for r in scripted.chat_requests[asked:] if r.schema_name is None]
        return reply.prompt

    return ask


@pytest.mark.anyio
@on_sqlite
async def test_over_budget_the_prompt_keeps_the_newest_messages_and_drops_the_oldest(
    ask: Ask, sessions: async_sessionmaker[AsyncSession], agent: BaseAgent
) -> None:
    await remember(sessions, agent, *(said(number) for number in range(10)))
    prompt = await ask(350, "What did we decide?")
    # Three fit in the budget; the window holds more than half of it.
    assert shown(prompt, 10) in ([7, 8, 9], [8, 9])
    assert "What did we decide?" in section(prompt, "CURRENT_USER_INPUT")


@pytest.mark.anyio
@on_sqlite
async def test_the_conversation_block_fits_the_budget(
    ask: Ask, sessions: async_sessionmaker[AsyncSession], agent: BaseAgent
) -> None:
    await remember(sessions, agent, *(said(number) for number in range(100)))
    prompt = await ask(1000, "And now?")
    conversation = section(prompt, "PREVIOUS_CONVERSATION")
    assert 500 < estimate_tokens(conversation) <= 1000
    kept = shown(prompt, 100)
    assert kept == list(range(kept[0], 100))


@pytest.mark.anyio
@on_sqlite
async def test_a_budget_of_zero_keeps_lizs_last_100_messages(
    ask: Ask, sessions: async_sessionmaker[AsyncSession], agent: BaseAgent
) -> None:
    await remember(sessions, agent, *(said(number) for number in range(120)))
    prompt = await ask(0, "Do you remember all that?")
    assert shown(prompt, 120) == list(range(20, 120))


@pytest.mark.anyio
@on_sqlite
async def test_a_newest_message_longer_than_the_budget_is_kept_alone(
    ask: Ask, sessions: async_sessionmaker[AsyncSession], agent: BaseAgent
) -> None:
    long_reply = said(2) + " Here is the whole plan, step by step." * 200
    await remember(sessions, agent, said(0), said(1), long_reply)
    prompt = await ask(100, "Yes, do that.")
    assert shown(prompt, 3) == [2]
    assert long_reply in section(prompt, "PREVIOUS_CONVERSATION")


@pytest.mark.anyio
@on_sqlite
async def test_what_the_dropped_messages_taught_stays_in_the_prompt_as_facts(
    ask: Ask,
    sessions: async_sessionmaker[AsyncSession],
    agent: BaseAgent,
    store: FactStore,
    scripted: ScriptedOpenAI,
) -> None:
    bakery = fact("User's bakery is in Lisbon")
    await seed(store, scripted, bakery, user="ada", agent=agent.agent_id)
    await remember(sessions, agent, "My bakery is in Lisbon.", *(said(n) for n in range(1, 10)))
    scripted.respond_with(lambda request: extraction() if request.schema_name else "Sure.")
    prompt = await ask(350, "Where is my bakery again?", store)
    assert "My bakery is in Lisbon." not in prompt
    assert "User's bakery is in Lisbon" in section(prompt, "USER_FACTS")


@pytest.mark.anyio
@on_sqlite
async def test_the_window_moves_in_steps_within_the_budget_the_same_in_two_processes(
    database_url: str, llm: LLMClient, scripted: ScriptedOpenAI, agent: BaseAgent
) -> None:
    """Two runtimes on one database take turns with one user: every prompt's conversation
    fits the budget, and its first message changes on a few turns only, between which
    each prompt's conversation starts with the whole of the previous one."""
    budget = 600
    settings = Settings(_env_file=None, database_url=database_url, liz_context_tokens=budget)  # type: ignore[call-arg]
    clock = ManualClock(START)
    engines = [create_engine(database_url), create_engine(database_url)]
    frameworks = [
        build_framework(Runtime(settings=settings, engine=engine, llm_client=llm, clock=clock))
        for engine in engines
    ]

    async def reply(request: RecordedRequest) -> str:
        await clock.advance(seconds=5)  # the reply comes after the message it answers
        return "Noted, and the rent too."

    scripted.respond_with(reply)
    conversations = []
    try:
        for turn in range(60):
            await clock.advance(seconds=60)
            text = f"message-{turn:03d} about the bakery"
            message = InputObject(agent_id=agent.agent_id, user_id="ada", text=text)
            res = await frameworks[turn % 2].process(message, agent)
            assert res.reply is not None, res.error
            prompt = scripted.chat_requests[-1].prompt
            conversations.append(section(prompt, "PREVIOUS_CONVERSATION").lstrip())
    finally:
        for engine in engines:
            await engine.dispose()
    assert all(estimate_tokens(c) <= budget for c in conversations)
    over_budget = [turn for turn, c in enumerate(conversations) if "message-000" not in c][1:]
    assert len(over_budget) > 30  # the conversation outgrew the budget halfway
    moved = [
        turn
        for turn in over_budget
        if conversations[turn].split("\n")[0] != conversations[turn - 1].split("\n")[0]
    ]
    # Anchors lie at least a quarter of the budget apart: a move every few turns at most.
    assert 2 <= len(moved) <= len(over_budget) // 4
    for turn in range(1, len(conversations)):
        if turn not in moved:  # the window kept its start: the conversation only grew
            assert conversations[turn].startswith(conversations[turn - 1])
        else:  # it moved in one step, and still holds more than a quarter of the budget
            assert estimate_tokens(conversations[turn]) > budget / 4


def test_a_negative_budget_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    result = run_liz("db", "upgrade", env={"LIZ_CONTEXT_TOKENS": "-1"}, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: bad setting LIZ_CONTEXT_TOKENS='-1': Input should be greater than or equal to 0"
    ]


def test_a_negative_budget_in_code_says_how_to_fix_it() -> None:
    with pytest.raises(UsageError, match=r"tokens must be 0 \(no budget\) or more"):
        load_memories(tokens=-1)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("Hi", 1),
        ("Hello there", 3),  # 11 bytes
        ("héllo", 2),  # é is 2 bytes: 6 bytes
        ("パン屋", 3),  # 3 bytes a character: 9 bytes
        ("🎉🎂", 2),  # 4 bytes an emoji
    ],
)
def test_tokens_are_estimated_from_the_texts_utf8_bytes(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens
