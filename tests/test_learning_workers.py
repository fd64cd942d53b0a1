"""Two workers on one database (two processes' worth: engines, LLM clients, claims): every
message is learned once and each user's in order, also when a claim runs out mid-learning."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.engine import create_engine
from liz.llm import LLMClient
from liz.testing.clock import ManualClock
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.learning_world import Brain, World, fact_text, learned_counts, make_world

pytestmark = pytest.mark.anyio

USERS = [f"user-{n}" for n in range(8)]
MESSAGES = 3


class SlowBrain:
    """The brain, a little slow to extract (so two workers overlap), or held at a gate."""

    def __init__(self, brain: Brain) -> None:
        self.brain = brain
        self.gate: asyncio.Event | None = None
        self.held = asyncio.Event()

    async def __call__(self, request: RecordedRequest) -> Any:
        if request.schema_name == "ExtractedFacts" and not self.brain.extraction_down:
            if self.gate is not None:
                gate, self.gate = self.gate, None
                self.held.set()
                await gate.wait()
                # Worded differently this time, as models do: not an exact duplicate.
                answer = self.brain(request)
                answer["facts"][0]["text"] += ", as the user put it"
                return answer
            await asyncio.sleep(0.005)
        return self.brain(request)


@pytest.fixture
async def two_workers(
    engine: AsyncEngine, llm: LLMClient, scripted: ScriptedOpenAI, database_url: str
) -> AsyncIterator[tuple[World, World, SlowBrain]]:
    brain = Brain()
    slow = SlowBrain(brain)
    scripted.respond_with(slow)
    # A clock per process, agreeing: a test that leaves the first one still stands for a
    # process that froze (its claims are not renewed while the second's time goes on).
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    other_engine = create_engine(database_url)
    other_llm = scripted.llm_client()
    first = make_world(engine, llm, brain, ManualClock(start), database_url=database_url)
    second = make_world(
        other_engine, other_llm, brain, ManualClock(start), database_url=database_url
    )
    try:
        yield first, second, slow
    finally:
        for world in (first, second):
            await world.runtime.background.drain()
        await other_llm.close()
        await other_engine.dispose()


async def test_two_workers_learn_every_message_once_and_in_order(
    two_workers: tuple[World, World, SlowBrain], engine: AsyncEngine
) -> None:
    first, second, slow = two_workers
    slow.brain.extraction_down = True  # the messages pile up in the queue
    for n in range(1, MESSAGES + 1):
        for index, user in enumerate(USERS):
            world = first if index % 2 else second
            assert (await world.say(user, f"{user} note {n}")).reply is not None
    for world in (first, second):
        await world.settle()
    assert slow.brain.learned_from == []

    slow.brain.extraction_down = False
    await first.clock.advance(hours=2)
    await second.clock.advance(hours=2)
    await asyncio.gather(first.runtime.learning.work_due(), second.runtime.learning.work_due())
    for world in (first, second):
        await world.settle()

    learned = slow.brain.learned_from
    assert sorted(learned) == sorted(f"{u} note {n}" for u in USERS for n in range(1, 4))
    for user in USERS:  # in order, each once
        assert [said for said in learned if said.startswith(f"{user} ")] == [
            f"{user} note {n}" for n in range(1, MESSAGES + 1)
        ]
    assert sorted((await learned_counts(engine)).values()) == [1] * (len(USERS) * MESSAGES)


async def test_a_message_learned_by_two_workers_is_kept_once(
    two_workers: tuple[World, World, SlowBrain], engine: AsyncEngine
) -> None:
    first, second, slow = two_workers
    slow.brain.extraction_down = True
    await first.say("ann", "ann note 1")
    await first.settle()
    slow.brain.extraction_down = False
    slow.gate = asyncio.Event()
    gate = slow.gate
    await first.clock.advance(hours=1)
    await second.clock.advance(hours=1)

    # The first worker claims the job and is held mid-extraction, frozen, past its
    # claim's end ...
    held = asyncio.create_task(first.runtime.learning.work_due())
    await asyncio.wait_for(slow.held.wait(), timeout=30)
    await second.clock.advance(seconds=first.runtime.learning.settings.lease_seconds + 1)
    # ... so the second takes the job over and learns it.
    await second.runtime.learning.work_due()
    assert await first.facts_of("ann") == [fact_text("ann note 1")]

    gate.set()  # the first finishes too: its facts are rolled back
    await asyncio.wait_for(held, timeout=30)
    await first.settle()
    assert slow.brain.learned_from == ["ann note 1", "ann note 1"]  # extracted twice ...
    assert await first.facts_of("ann") == [fact_text("ann note 1")]  # ... learned once
    assert list((await learned_counts(engine)).values()) == [1]


async def test_messages_learned_together_by_two_workers_are_kept_once(
    two_workers: tuple[World, World, SlowBrain], engine: AsyncEngine
) -> None:
    first, second, slow = two_workers
    slow.brain.extraction_down = True
    said = ["ann keeps bees", "ann plays cello", "ann moved to Turku"]
    for text in said:
        await first.say("ann", text)
    await first.settle()
    slow.brain.extraction_down = False
    slow.gate = asyncio.Event()
    gate = slow.gate
    await first.clock.advance(hours=1)
    await second.clock.advance(hours=1)

    # The first worker claims the three as one run and is held, frozen, past its claim's
    # end ...
    held = asyncio.create_task(first.runtime.learning.work_due())
    await asyncio.wait_for(slow.held.wait(), timeout=30)
    await second.clock.advance(seconds=first.runtime.learning.settings.lease_seconds + 1)
    # ... so the second takes the run over and learns it, in one round.
    await second.runtime.learning.work_due()
    assert sorted(await first.facts_of("ann")) == sorted(fact_text(text) for text in said)

    gate.set()  # the first finishes too: everything it wrote is rolled back
    await asyncio.wait_for(held, timeout=30)
    await first.settle()
    assert slow.brain.extractions == [said, said]  # extracted twice, together each time ...
    assert sorted(await first.facts_of("ann")) == sorted(fact_text(t) for t in said)  # ... once
    assert sorted((await learned_counts(engine)).values()) == [1, 1, 1]
