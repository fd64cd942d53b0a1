"""Learning gives way to turns: it starts in a lull (no turn under way for
``quiet_seconds``), so a burst of turns is not slowed by it, and under unbroken turns
it starts anyway once a message has waited ``max_defer_seconds``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.llm import LLMClient
from liz.runtime.turns_under_way import TurnsUnderWay
from liz.testing.clock import ManualClock
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.learning_world import Brain, World, fact_text, make_world

pytestmark = pytest.mark.anyio


class HeldReply:
    """The brain, holding the reply to one message until the test lets it go."""

    def __init__(self, brain: Brain, held: str) -> None:
        self.brain = brain
        self.held = held
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, request: RecordedRequest) -> Any:
        if request.schema_name is None and self.held in request.prompt:
            self.holding.set()
            await self.release.wait()
        return self.brain(request)


def world_giving_way(
    engine: AsyncEngine, llm: LLMClient, database_url: str, *, max_defer_seconds: float
) -> World:
    """A world whose learning waits for the turns to end, ``max_defer_seconds`` at most
    (no quiet time after them: ``TurnsUnderWay.lull``'s own test covers that)."""
    return make_world(
        engine,
        llm,
        Brain(),
        ManualClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC)),
        database_url=database_url,
        quiet_seconds=0,
        max_defer_seconds=max_defer_seconds,
    )


@pytest.fixture
async def world(engine: AsyncEngine, llm: LLMClient, database_url: str) -> AsyncIterator[World]:
    world = world_giving_way(engine, llm, database_url, max_defer_seconds=30)
    yield world
    await world.runtime.background.drain()


async def test_a_message_is_learned_from_once_no_other_turn_is_under_way(
    world: World, scripted: ScriptedOpenAI
) -> None:
    held = HeldReply(world.brain, "a long question")
    scripted.respond_with(held)
    slow = asyncio.create_task(world.say("bob", "a long question"))
    await held.holding.wait()  # bob's turn is under way

    await world.say("ada", "I moved to Oslo in May")
    await world.clock.wait_for_sleepers(1)  # ada's learning waits on the clock ...
    await world.clock.advance(seconds=20)  # ... for bob's turn, within its 30 s limit
    assert world.brain.extractions == [], "learning started while bob's turn was under way"

    held.release.set()
    await slow
    await world.settle()
    assert await world.facts_of("ada") == [fact_text("I moved to Oslo in May")]
    assert await world.facts_of("bob") == [fact_text("a long question")]


async def test_under_unbroken_turns_a_message_waits_no_longer_than_the_limit(
    engine: AsyncEngine, llm: LLMClient, scripted: ScriptedOpenAI, database_url: str
) -> None:
    world = world_giving_way(engine, llm, database_url, max_defer_seconds=1.0)
    brain = world.brain
    scripted.respond_with(brain)
    with world.runtime.turns.one():  # a turn (a stream, say) that never ends meanwhile
        await world.say("ada", "I moved to Oslo in May")
        await world.clock.wait_for_sleepers(1)  # learning waits for the turn to end ...
        assert brain.extractions == []
        await world.clock.advance(seconds=1)  # ... until the limit passes: it goes ahead
        async with asyncio.timeout(30):  # a bound only (the next round waits on the clock)
            while not await world.facts_of("ada"):
                await asyncio.sleep(0.01)
        assert await world.facts_of("ada") == [fact_text("I moved to Oslo in May")]
    await world.settle()


async def test_a_turn_started_in_the_quiet_time_starts_the_wait_again() -> None:
    clock = ManualClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    turns = TurnsUnderWay(clock)
    lulls: list[datetime] = []

    async def wait_for_a_lull() -> None:
        await turns.lull(1.0, until=clock.now() + timedelta(seconds=30))
        lulls.append(clock.now())
        await clock.sleep(3600)  # stays asleep, as a worker between rounds

    waiting = asyncio.create_task(wait_for_a_lull())
    await clock.wait_for_sleepers(1)
    await clock.advance(seconds=0.8)
    with turns.one():
        await clock.advance(seconds=0.1)
    await clock.advance(seconds=0.2)  # past the first quiet second, early in the second one
    assert lulls == []
    await clock.advance(seconds=1)
    assert len(lulls) == 1  # a second quiet second went by
    waiting.cancel()
