"""LIZ_CONTEXT_TOKENS: the prompt keeps the newest messages that fit; the oldest go first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.agent import BaseAgent
from liz.bootstrap import build_framework
from liz.config import Settings
from liz.db.engine import make_sessionmaker
from liz.db.memories import insert_memory
from liz.llm import LLMClient
from liz.runtime import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from liz.tokens import MESSAGE_OVERHEAD_TOKENS, estimate_tokens
from liz.types import InputObject, Memory

on_sqlite = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

EARLIER = 10
FILLER = "about the bakery plans and the rent in Lisbon " * 4  # ~180 bytes


def earlier_text(number: int) -> str:
    return f"earlier-{number:02d} {FILLER}"


async def ask(
    budget: int, database_url: str, engine: AsyncEngine, llm: LLMClient, agent: BaseAgent
) -> str | None:
    """Seed ten earlier messages, send one more; the error text, if the turn failed."""
    start = datetime.now(UTC) - timedelta(hours=1)
    async with make_sessionmaker(engine)() as session, session.begin():
        for number in range(EARLIER):
            await insert_memory(
                session,
                Memory(
                    user_id="ada",
                    agent_id=agent.agent_id,
                    room_id="r",
                    type="text",
                    generator="external",
                    content={"text": earlier_text(number)},
                    created_at=start + timedelta(minutes=number),
                ),
            )
    settings = Settings(_env_file=None, database_url=database_url, liz_context_tokens=budget)  # type: ignore[call-arg]
    runtime = Runtime(settings=settings, engine=engine, llm_client=llm)
    framework = build_framework(runtime)
    said = InputObject.model_validate({"agentId": agent.agent_id, "userId": "ada", "text": "hi"})
    res = await framework.process(said, agent)
    await runtime.background.drain()
    return None if res.error is None else res.error.message


@pytest.mark.anyio
@on_sqlite
async def test_over_budget_the_prompt_leaves_out_the_oldest_messages(
    database_url: str,
    engine: AsyncEngine,
    llm: LLMClient,
    scripted: ScriptedOpenAI,
    agent: BaseAgent,
) -> None:
    per_message = MESSAGE_OVERHEAD_TOKENS + estimate_tokens(earlier_text(0))
    scripted.reply("Sure.")
    assert await ask(3 * per_message, database_url, engine, llm, agent) is None
    prompt = scripted.chat_requests[-1].prompt
    kept = [n for n in range(EARLIER) if f"earlier-{n:02d}" in prompt]
    assert kept == [7, 8, 9]
    assert "hi" in prompt


@pytest.mark.anyio
@on_sqlite
async def test_a_budget_of_zero_keeps_every_loaded_message(
    database_url: str,
    engine: AsyncEngine,
    llm: LLMClient,
    scripted: ScriptedOpenAI,
    agent: BaseAgent,
) -> None:
    scripted.reply("Sure.")
    assert await ask(0, database_url, engine, llm, agent) is None
    prompt = scripted.chat_requests[-1].prompt
    assert all(f"earlier-{n:02d}" in prompt for n in range(EARLIER))


def test_a_negative_budget_is_refused_with_the_setting_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LIZ_CONTEXT_TOKENS", "-1")
    with pytest.raises(ValidationError, match=r"liz_context_tokens\n.*greater than or equal to 0"):
        Settings(_env_file=None)  # type: ignore[call-arg]
