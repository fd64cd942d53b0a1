"""Shared pieces of the durable-learning tests: a scripted brain, a world on a clock.

(No tests here; the test modules build on these.)
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.agent import BaseAgent
from liz.character import Character
from liz.config import Settings
from liz.db.engine import make_sessionmaker
from liz.facts.settings import FactSettings
from liz.facts.store import FactStore
from liz.facts.tables import FactHistoryRecord, FactRecord
from liz.learning_queue.settings import LearningSettings
from liz.llm import LLMClient
from liz.middleware import (
    create_memory,
    extract_facts,
    load_memories,
    recall_facts,
    router,
    validate_input,
    wrap_context,
)
from liz.pipeline import AgentFramework, AgentResponse
from liz.routes import conversation
from liz.runtime.services import Runtime
from liz.testing.clock import ManualClock
from liz.testing.openai_server import RecordedRequest, ScriptedError
from liz.types import InputObject

AGENT = "ada-bot"
SAID = re.compile(r"^user: (.*)$", re.M)
# Each message an extraction prompt lists: its number, then what the user said.
NUMBERED = re.compile(r'<MESSAGE number="(\d+)">\nuser: (.*)$', re.M)


def learning_settings(**overrides: Any) -> LearningSettings:
    values: dict[str, Any] = {
        "poll_seconds": 60,
        "first_retry_seconds": 10,
        "max_retry_seconds": 3600,
        "lease_seconds": 300,
        "reply_wait_seconds": 120,
        "max_bad_answers": 3,
        # No quiet time to wait out on the test's clock; a test of the lull sets one.
        "quiet_seconds": 0,
    }
    return LearningSettings(_env_file=None, **(values | overrides))  # type: ignore[call-arg]


def process_settings(database_url: str, **learning: Any) -> Settings:
    """The settings of a whole process (``open_runtime``) whose facts stand alone."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=database_url,
        facts=FactSettings(_env_file=None, reconcile_threshold=0.99),  # type: ignore[call-arg]
        learning=LearningSettings(_env_file=None, **learning),  # type: ignore[call-arg]
    )


def fact_text(said: str) -> str:
    """The one fact the scripted brain learns from a message (from its first 60 characters)."""
    return f"User wrote {said[:60]}"


@dataclass
class Brain:
    """The scripted LLM: replies "Noted.", learns one fact per message (naming the
    message), fails on demand."""

    replies_down: bool = False
    extraction_down: bool = False
    bad_answers: bool = False
    padding: int = 0  # characters added to each fact (facts that need room to store)
    # An extraction whose prompt holds one of these is refused (400), as an endpoint
    # refuses a message it cannot take (too long, against its policy).
    refused: set[str] = field(default_factory=set)
    # An extraction whose prompt holds one of these fails with a server error (500), as
    # an endpoint may fail on one input every time; to the worker that reads as an outage.
    broken: set[str] = field(default_factory=set)
    # An extraction whose prompt holds one of these is answered 503 (overloaded), as if
    # the endpoint were down whenever this message is sent.
    overloaded: set[str] = field(default_factory=set)
    learned_from: list[str] = field(default_factory=list)  # successful extractions, in order
    extractions: list[list[str]] = field(default_factory=list)  # the messages of each

    def __call__(self, request: RecordedRequest) -> Any:
        if request.schema_name == "ExtractedFacts":
            if self.extraction_down:
                return ScriptedError(503, "the model is overloaded")
            if any(text in request.prompt for text in self.refused):
                return ScriptedError(400, "the model cannot take this message")
            if any(text in request.prompt for text in self.broken):
                return ScriptedError(500, "the model crashed")
            if any(text in request.prompt for text in self.overloaded):
                return ScriptedError(503, "the model is overloaded")
            if self.bad_answers:
                return "this is not JSON"
            numbered = NUMBERED.findall(request.prompt)
            self.learned_from.extend(said for _, said in numbered)
            self.extractions.append([said for _, said in numbered])
            padding = " " * self.padding + "." * bool(self.padding)
            return {
                "facts": [
                    {
                        "message": int(number),
                        "text": fact_text(said) + padding,
                        "subject": "user",
                        "categories": ["notes", "misc"],
                    }
                    for number, said in numbered
                ]
            }
        if self.replies_down:
            return ScriptedError(503, "the model is overloaded")
        return "Noted."


@dataclass
class World:
    clock: ManualClock
    brain: Brain
    runtime: Runtime
    store: FactStore
    agent: BaseAgent
    framework: AgentFramework

    async def say(self, user: str, text: str) -> AgentResponse:
        message = InputObject(agent_id=AGENT, user_id=user, room_id=f"room-{user}", text=text)
        return await self.framework.process(message, self.agent)

    async def settle(self) -> None:
        """Let the work started by the last messages finish (no clock time passes)."""
        await self.runtime.background.drain()

    async def later(self, **time: float) -> None:
        """Let time pass, then let the worker try every job that is due."""
        await self.clock.advance(**time)
        await self.runtime.learning.work_due()
        await self.runtime.background.drain()

    async def facts_of(self, user: str) -> list[str]:
        """The texts of the user's facts."""
        return [fact.text for fact in await self.store.list(AGENT, user)]


def make_agent() -> BaseAgent:
    agent = BaseAgent(Character(agent_id=AGENT, name="Ada", system="You are Ada."))
    agent.add_route(conversation)
    return agent


def make_world(
    engine: AsyncEngine,
    llm: LLMClient,
    brain: Brain,
    clock: ManualClock,
    *,
    database_url: str,
    **settings: Any,
) -> World:
    store = FactStore(
        make_sessionmaker(engine),
        llm,
        engine=engine,
        clock=clock,
        # Every message's fact stands alone: no reconcile call to script.
        settings=FactSettings(_env_file=None, reconcile_threshold=0.99),  # type: ignore[call-arg]
    )
    runtime = Runtime(
        settings=Settings(
            _env_file=None,  # type: ignore[call-arg]
            database_url=database_url,
            learning=learning_settings(**settings),
        ),
        engine=engine,
        llm_client=llm,
        clock=clock,
        facts=store,
    )
    framework = AgentFramework(runtime).use(
        validate_input,
        load_memories(),
        recall_facts(),
        wrap_context,
        create_memory,
        extract_facts(attempts=2, wait_seconds=0),
        router,
    )
    return World(clock, brain, runtime, store, make_agent(), framework)


async def learned_counts(engine: AsyncEngine) -> Counter[str]:
    """How many facts were added from each message (by the message's id)."""
    async with make_sessionmaker(engine)() as session:
        rows = await session.execute(
            select(FactRecord.source_memory_id, func.count())
            .join(FactHistoryRecord, FactHistoryRecord.fact_id == FactRecord.id)
            .where(FactHistoryRecord.event == "ADD")
            .group_by(FactRecord.source_memory_id)
        )
        return Counter({str(source): int(count) for source, count in rows})
