"""LIZ_CONTEXT_TOKENS: the prompt keeps the newest messages that fit; the oldest go first."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.agent import BaseAgent
from liz.bootstrap import build_framework
from liz.config import Settings
from liz.db.memories import insert_memory
from liz.errors import UsageError
from liz.facts.store import FactStore
from liz.llm import LLMClient
from liz.middleware import load_memories
from liz.runtime import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from liz.tokens import estimate_tokens
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
    assert shown(prompt, 10) == [7, 8, 9]
    assert "What did we decide?" in section(prompt, "CURRENT_USER_INPUT")


@pytest.mark.anyio
@on_sqlite
async def test_the_conversation_block_fits_the_budget(
    ask: Ask, sessions: async_sessionmaker[AsyncSession], agent: BaseAgent
) -> None:
    await remember(sessions, agent, *(said(number) for number in range(100)))
    prompt = await ask(1000, "And now?")
    conversation = section(prompt, "PREVIOUS_CONVERSATION")
    assert 900 < estimate_tokens(conversation) <= 1000
    assert shown(prompt, 100)[-1] == 99


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
