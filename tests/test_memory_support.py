"""Shared pieces of the memory tests: a store on each database, a clock, scripted answers.

(No tests here; the test modules import these fixtures and helpers.)
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.llm import LLMClient
from liz.memory.settings import MemorySettings
from liz.memory.store import MemoryStore

AGENT = "ada-bot"
USER = "user-1"


class ManualClock:
    """A clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: int = 1) -> datetime:
        self.now += timedelta(minutes=minutes)
        return self.now


def memory_settings(**overrides: Any) -> MemorySettings:
    return MemorySettings(_env_file=None, **overrides)  # type: ignore[call-arg]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(
    sessions: async_sessionmaker[AsyncSession],
    engine: AsyncEngine,
    llm: LLMClient,
    clock: ManualClock,
) -> MemoryStore:
    """A store on the migrated test database (SQLite, then PostgreSQL with pgvector)."""
    return MemoryStore(
        sessions, llm, engine=engine, clock=clock, settings=memory_settings(reconcile_threshold=0.3)
    )


def fact(text: str, subject: str = "user", *categories: str) -> dict[str, Any]:
    """One extracted fact, as the LLM would answer it."""
    return {
        "text": text,
        "subject": subject,
        "categories": list(categories or ("personal", "misc")),
    }


def extraction(*facts: dict[str, Any]) -> dict[str, Any]:
    return {"facts": list(facts)}


def decision(
    new_fact: int,
    event: str,
    id: int | None = None,
    text: str | None = None,
    categories: tuple[str, ...] = ("personal", "misc"),
    reason: str = "scripted",
) -> dict[str, Any]:
    return {
        "new_fact": new_fact,
        "event": event,
        "id": id,
        "text": text,
        "categories": None if event == "NOOP" else list(categories),
        "reason": reason,
    }


def plan(*decisions: dict[str, Any]) -> dict[str, Any]:
    return {"decisions": list(decisions)}


async def seed(
    store: MemoryStore, scripted: Any, *facts: dict[str, Any], user: str = USER, agent: str = AGENT
) -> list[str]:
    """Store facts with nothing similar around (no reconcile call); return their ids."""
    scripted.reply(extraction(*facts))
    events = await store.add("seed", agent, user)
    return [event.fact_id for event in events]
