"""Learning per conversation burst: a user's messages are learned together once the
conversation has been quiet ``LIZ_LEARN_AFTER_IDLE``, once ``LIZ_LEARN_BATCH`` have
gathered, or when the process stops cleanly; with every guarantee of the queue."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette

from liz.db.engine import make_sessionmaker
from liz.db.usage import UsageRecord
from liz.http import create_app
from liz.learning_queue.health import learning_backlog
from liz.llm import LLMClient
from liz.middleware import create_memory, extract_facts, router, validate_input, wrap_context
from liz.pipeline import AgentFramework
from liz.runtime.bootstrap import open_runtime
from liz.testing.clock import ManualClock
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from liz.types import InputObject
from tests.learning_world import (
    AGENT,
    Brain,
    World,
    fact_text,
    learned_counts,
    make_agent,
    process_settings,
)
from tests.learning_world import make_world as make_learning_world
from tests.test_learning_queue import liz_facts

pytestmark = pytest.mark.anyio

IDLE = 30.0
PLACES = ["location", "home"]


def world_on(
    engine: AsyncEngine, llm: LLMClient, brain: Brain, url: str, **settings: float
) -> World:
    clock = ManualClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    values = {"learn_after_idle": IDLE, "batch_size": 16} | settings
    return make_learning_world(engine, llm, brain, clock, database_url=url, **values)


@pytest.fixture
async def brain(scripted: ScriptedOpenAI) -> Brain:
    brain = Brain()
    scripted.respond_with(brain)
    return brain


@pytest.fixture
async def world(
    engine: AsyncEngine, llm: LLMClient, brain: Brain, database_url: str
) -> AsyncIterator[World]:
    world = world_on(engine, llm, brain, database_url)
    yield world
    await world.runtime.learning.stop()  # a burst still gathering is learned, not left hanging
    await world.runtime.background.drain()


async def quiet(world: World, seconds: float) -> None:
    """Let the conversation be quiet that long, and the learning it starts finish."""
    await world.clock.advance(seconds=seconds)
    await world.settle()


async def test_a_burst_is_learned_in_one_extraction_once_the_user_is_quiet(
    world: World, brain: Brain, engine: AsyncEngine
) -> None:
    said = ["I keep bees", "I play the cello", "my sister Mia lives in Oslo"]
    for text in said:
        await world.say("ann", text)
        await world.clock.advance(seconds=IDLE / 3)  # seconds apart: one conversation
    assert brain.extractions == []  # nothing yet: the user may go on
    assert (await learning_backlog(world.runtime))["pending"] == 3

    await quiet(world, IDLE)
    assert brain.extractions == [said]  # one call for the whole burst, in order
    assert sorted(await world.facts_of("ann")) == sorted(fact_text(text) for text in said)
    assert (await learning_backlog(world.runtime))["pending"] == 0
    assert sorted((await learned_counts(engine)).values()) == [1, 1, 1]  # each once

    await world.say("ann", "I moved to Turku")  # the next burst starts afresh
    await quiet(world, IDLE)
    assert brain.extractions == [said, ["I moved to Turku"]]


async def test_a_batch_that_has_gathered_is_learned_without_waiting(
    engine: AsyncEngine, llm: LLMClient, brain: Brain, database_url: str
) -> None:
    world = world_on(engine, llm, brain, database_url, batch_size=3)
    for number in range(1, 4):
        await world.say("ann", f"note {number}")
    await world.settle()  # no time passes: the third message completes the batch
    assert brain.extractions == [["note 1", "note 2", "note 3"]]
    await world.say("ann", "note 4")
    await world.runtime.learning.stop()  # the next burst had only begun: drained
    await world.settle()
    assert brain.extractions == [["note 1", "note 2", "note 3"], ["note 4"]]


async def test_a_contradiction_within_one_burst_ends_with_one_active_fact_and_history(
    world: World, scripted: ScriptedOpenAI
) -> None:
    def brain(request: RecordedRequest) -> Any:
        if request.schema_name != "ExtractedFacts":
            return "Noted."
        # What the extraction prompt asks for when a later message changes an earlier
        # one: the earlier fact marked as changed later, then the state after.
        assert "oldest first" in request.prompt and '"changed_later": true' in request.prompt
        said = [("User lives in Paris", 1, True), ("User lives in Berlin", 3, False)]
        return {
            "facts": [
                {"message": number, "text": text, "subject": "user", "categories": PLACES}
                | {"changed_later": changed}
                for text, number, changed in said
            ]
        }

    scripted.respond_with(brain)
    await world.say("ann", "I live in Paris")
    await world.say("ann", "I love the museums")
    await world.say("ann", "actually I moved to Berlin")
    await quiet(world, IDLE)
    assert await world.facts_of("ann") == ["User lives in Berlin"]
    every = await world.store.list(AGENT, "ann", include_retired=True)
    (paris,) = [fact for fact in every if fact.text == "User lives in Paris"]
    assert paris.retired_at is not None  # kept, no longer true
    events = [entry.event for entry in await world.store.history(paris.id, AGENT, "ann")]
    assert events == ["ADD", "DELETE"]


async def test_an_outage_mid_burst_loses_nothing_and_learns_each_message_once(
    world: World, brain: Brain, engine: AsyncEngine
) -> None:
    await world.say("ann", "I keep bees")
    await world.say("ann", "I play the cello")
    brain.extraction_down = True
    await quiet(world, IDLE)
    assert await world.facts_of("ann") == []
    assert (await learning_backlog(world.runtime))["pending"] == 2

    brain.extraction_down = False
    await world.later(hours=1)
    assert sorted(await world.facts_of("ann")) == [
        fact_text("I keep bees"),
        fact_text("I play the cello"),
    ]
    assert sorted((await learned_counts(engine)).values()) == [1, 1]
    assert (await learning_backlog(world.runtime))["pending"] == 0


async def test_a_burst_is_learned_once_by_whichever_process_gets_to_it_first(
    engine: AsyncEngine, llm: LLMClient, brain: Brain, database_url: str
) -> None:
    gathering = world_on(engine, llm, brain, database_url)
    await gathering.say("ann", "I keep bees")
    await gathering.say("ann", "I play the cello")
    # Another process sharing the database (its own clock): the jobs are due for it too,
    # once the user has been quiet, not before.
    other = world_on(engine, llm, brain, database_url)
    await other.later(seconds=5)
    assert brain.extractions == []
    await other.later(seconds=IDLE)
    assert brain.extractions == [["I keep bees", "I play the cello"]]
    await gathering.runtime.learning.stop()  # its burst is drained: already learned
    await gathering.settle()
    assert brain.extractions == [["I keep bees", "I play the cello"]]
    assert sorted((await learned_counts(engine)).values()) == [1, 1]


async def test_a_clean_stop_learns_the_bursts_gathered(
    database_url: str, scripted: ScriptedOpenAI, tmp_path: Path
) -> None:
    brain = Brain()
    scripted.respond_with(brain)
    settings = process_settings(database_url, learn_after_idle=3600)
    async with scripted.llm_client() as llm:
        async with open_runtime(settings, llm_client=llm) as rt:
            framework = AgentFramework(rt).use(
                validate_input, wrap_context, create_memory, extract_facts(), router
            )
            for text in ("I keep bees", "I play the cello"):
                said = InputObject(agent_id=AGENT, user_id="ann", text=text)
                await framework.process(said, make_agent())
            await asyncio.sleep(0)
            backlog = await learning_backlog(rt)
            assert backlog["pending"] == 2 and backlog["oldestPendingSeconds"] is not None
            listed = liz_facts("queue", database_url=database_url, cwd=tmp_path)
            assert "2 pending (oldest" in listed.stdout, listed.stderr
        # Stopped: the burst was learned in one extraction before the process ended.
        assert brain.extractions == [["I keep bees", "I play the cello"]]
        assert (await learning_backlog(rt))["pending"] == 0


async def test_health_and_the_users_facts_say_how_long_learning_has_waited(
    world: World,
) -> None:
    await world.say("ann", "I keep bees")
    await world.clock.advance(seconds=20)
    await world.say("ann", "I play the cello")
    await world.clock.advance(seconds=5)
    app = create_app(world.framework, {AGENT: world.agent})
    health = await get_json(app, "/health")
    listed = await get_json(app, f"/agents/{AGENT}/users/ann/facts")
    others = await get_json(app, f"/agents/{AGENT}/users/bob/facts")
    waiting = {"pending": 2, "failed": 0, "oldestPendingSeconds": 25.0}
    assert health["learning"] == waiting | {"learnAfterIdleSeconds": IDLE}
    assert listed == {"facts": [], "learning": waiting | {"learnAfterIdleSeconds": IDLE}}
    assert others["learning"]["pending"] == 0

    await quiet(world, IDLE * 1.5)  # by the beat after the user has been quiet IDLE
    listed = await get_json(app, f"/agents/{AGENT}/users/ann/facts")
    assert listed["learning"]["pending"] == 0 and len(listed["facts"]) == 2


async def test_a_bursts_tokens_are_counted_once_with_its_facts(
    world: World, brain: Brain, engine: AsyncEngine
) -> None:
    await world.say("ann", "I keep bees")
    await world.say("ann", "I play the cello")
    replies = await usage_of(engine, "ann")
    brain.extraction_down = True
    await quiet(world, IDLE)  # a failed try writes no facts, and no usage with them
    assert await usage_of(engine, "ann") == replies

    brain.extraction_down = False
    await world.later(hours=1)
    learned = await usage_of(engine, "ann") - replies
    # One extraction call and one embeddings request for the burst's facts.
    assert sorted(learned.elements()) == ["embed", "extract"]


async def get_json(app: Starlette, path: str) -> Any:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client:
        return (await client.get(f"http://localhost{path}")).json()


async def usage_of(engine: AsyncEngine, user: str) -> Counter[str]:
    """The calls in the usage table for the user, by purpose."""
    async with make_sessionmaker(engine)() as session:
        rows = await session.execute(
            select(UsageRecord.purpose, UsageRecord.calls).where(UsageRecord.user_id == user)
        )
        return Counter({purpose: int(calls) for purpose, calls in rows})
