"""Learning a user's waiting messages together: one round (one extraction call, one
embedding request, one commit) for all of them, each fact credited to its message,
nothing lost or learned twice, and a message that cannot be learned holding up no other."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.engine import make_sessionmaker
from liz.db.tables import MemoryRecord
from liz.facts.domain import Exchange
from liz.facts.store import FactStore
from liz.learning_queue.jobs import list_jobs
from liz.llm import LLMClient
from liz.testing.clock import ManualClock
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.fixtures.facts import AGENT, USER, extraction, fact
from tests.learning_world import NUMBERED, Brain, World, fact_text, make_world

pytestmark = pytest.mark.anyio


class GatedBrain:
    """The brain, holding the next extraction at a gate while the test sends more."""

    def __init__(self, brain: Brain) -> None:
        self.brain = brain
        self.gate: asyncio.Event | None = None
        self.held = asyncio.Event()

    def hold_next(self) -> asyncio.Event:
        self.gate = asyncio.Event()
        self.held.clear()
        return self.gate

    async def __call__(self, request: RecordedRequest) -> Any:
        if request.schema_name == "ExtractedFacts" and self.gate is not None:
            gate, self.gate = self.gate, None
            self.held.set()
            await gate.wait()
        return self.brain(request)


@pytest.fixture
async def gated(scripted: ScriptedOpenAI) -> GatedBrain:
    gated = GatedBrain(Brain())
    scripted.respond_with(gated)
    return gated


def world_of(
    engine: AsyncEngine, llm: LLMClient, brain: Brain, database_url: str, **settings: Any
) -> World:
    clock = ManualClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    return make_world(engine, llm, brain, clock, database_url=database_url, **settings)


@pytest.fixture
async def world(
    engine: AsyncEngine, llm: LLMClient, gated: GatedBrain, database_url: str
) -> AsyncIterator[World]:
    world = world_of(engine, llm, gated.brain, database_url)
    yield world
    await world.runtime.background.drain()


async def say_while_the_first_is_learned(
    world: World, gated: GatedBrain, user: str, first: str, *later: str
) -> None:
    """``first`` is being learned (its extraction held) while ``later`` are said; then
    the extraction goes on and everything started is let finish."""
    gate = gated.hold_next()
    await world.say(user, first)
    await gated.held.wait()
    for text in later:
        await world.say(user, text)
    gate.set()
    await world.settle()


async def sources_of(world: World, user: str) -> dict[str, str]:
    """Each fact's text, and what the user said in the message it is credited to."""
    facts = await world.store.list(AGENT, user)
    async with make_sessionmaker(world.runtime.engine)() as session:
        said = {
            row.id: json.loads(row.content)["text"]
            for row in await session.scalars(select(MemoryRecord))
        }
    return {fact.text: said.get(fact.source_memory_id or "", "?") for fact in facts}


async def pending_and_failed(world: World) -> list[tuple[str, int]]:
    async with make_sessionmaker(world.runtime.engine)() as session:
        return [(job.status, job.attempts) for job in await list_jobs(session)]


async def test_messages_said_while_one_is_learned_are_learned_together_each_credited(
    world: World, gated: GatedBrain, scripted: ScriptedOpenAI
) -> None:
    said = ["I keep bees", "I moved to Turku", "My sister is Mia", "I play the cello"]
    await say_while_the_first_is_learned(world, gated, "ann", *said)
    # The first alone (nothing was waiting), the three said meanwhile in one round.
    assert gated.brain.extractions == [said[:1], said[1:]]
    assert await sources_of(world, "ann") == {fact_text(text): text for text in said}
    assert await pending_and_failed(world) == []
    extraction_prompts = [r.prompt for r in scripted.chat_requests if r.schema_name]
    assert [p.count("<MESSAGE number=") for p in extraction_prompts] == [1, 3]
    # One embedding request for the round's three new facts (and each reply's recall).
    learned = [r for r in scripted.embedding_requests if len(r.inputs) == 3]
    assert len(learned) == 1


async def test_no_more_than_batch_size_messages_are_learned_in_one_round(
    engine: AsyncEngine, llm: LLMClient, gated: GatedBrain, database_url: str
) -> None:
    world = world_of(engine, llm, gated.brain, database_url, batch_size=2)
    said = [f"ann note {n}" for n in ("one", "two", "three", "four", "five", "six")]
    await say_while_the_first_is_learned(world, gated, "ann", *said)
    await world.runtime.background.drain()
    assert gated.brain.extractions == [said[:1], said[1:3], said[3:5], said[5:]]
    assert sorted(await world.facts_of("ann")) == sorted(fact_text(text) for text in said)
    assert await pending_and_failed(world) == []


async def test_messages_due_in_the_queue_are_learned_together_per_user_in_order(
    world: World, gated: GatedBrain, engine: AsyncEngine
) -> None:
    gated.brain.extraction_down = True
    users = ["ann", "bob"]
    for n in (1, 2, 3):
        for user in users:
            await world.say(user, f"{user} note {n}")
    await world.settle()
    await world.later(hours=2)  # still down: every job has been tried again and waits
    gated.brain.extraction_down = False
    gated.brain.extractions.clear()
    await world.later(hours=1)  # the longest wait between tries: all due at once
    assert sorted(gated.brain.extractions) == [
        [f"{user} note {n}" for n in (1, 2, 3)] for user in users
    ]
    for user in users:
        assert await sources_of(world, user) == {
            fact_text(f"{user} note {n}"): f"{user} note {n}" for n in (1, 2, 3)
        }
    assert await pending_and_failed(world) == []


async def test_a_message_the_model_refuses_holds_up_none_of_the_users_others(
    world: World, gated: GatedBrain
) -> None:
    gated.brain.refused = {"ann poison"}
    await say_while_the_first_is_learned(
        world, gated, "ann", "ann note one", "ann poison", "ann note three", "ann note four"
    )
    # Refused together, then tried one by one: the others are learned all the same.
    assert sorted(await world.facts_of("ann")) == [
        fact_text(f"ann note {n}") for n in ("four", "one", "three")
    ]
    ((status, attempts),) = await pending_and_failed(world)
    assert status == "pending" and attempts >= 1  # kept, to be tried again later

    await world.say("ann", "ann note five")  # behind the refused message in the queue
    await world.settle()
    await world.later(hours=1)  # the refused one is due again: refused again, note 5 learned
    assert fact_text("ann note five") in await world.facts_of("ann")
    assert [status for status, _ in await pending_and_failed(world)] == ["pending"]

    gated.brain.refused = set()  # the model takes it at last
    await world.later(hours=1)
    assert sorted(await world.facts_of("ann")) == sorted(
        fact_text(f"ann {text}")
        for text in ("note one", "poison", "note three", "note four", "note five")
    )
    assert await pending_and_failed(world) == []


async def test_an_outage_during_a_round_keeps_every_message_of_it_queued(
    world: World, gated: GatedBrain
) -> None:
    gate = gated.hold_next()
    await world.say("ann", "ann note 1")
    await gated.held.wait()
    gated.brain.extraction_down = True  # from the round after the held one on
    for n in (2, 3):
        await world.say("ann", f"ann note {n}")
    gate.set()
    await world.settle()
    assert await world.facts_of("ann") == []  # the held one answered after the outage began
    assert [status for status, _ in await pending_and_failed(world)] == ["pending"] * 3

    gated.brain.extraction_down = False
    await world.later(hours=1)
    assert sorted(await world.facts_of("ann")) == [fact_text(f"ann note {n}") for n in (1, 2, 3)]
    assert await pending_and_failed(world) == []


async def test_learning_several_exchanges_credits_each_fact_to_the_message_it_names(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    scripted.reply(
        extraction(
            {**fact("User keeps bees", "user", "hobbies", "animals"), "message": 1},
            {**fact("User lives in Turku", "user", "location", "home"), "message": 2},
            # No number, or one not listed: the latest message.
            fact("User's sister is Mia", "user's sister Mia", "family", "people"),
            {**fact("User plays the cello", "user", "hobbies", "music"), "message": 7},
        )
    )
    await store.learn(
        [
            Exchange([{"role": "user", "content": "I keep bees"}], "memory-1"),
            Exchange([{"role": "user", "content": "Moved to Turku; Mia is my sister"}], "memory-2"),
        ],
        AGENT,
        USER,
    )
    sources = {f.text: f.source_memory_id for f in await store.list(AGENT, USER)}
    assert sources == {
        "User keeps bees": "memory-1",
        "User lives in Turku": "memory-2",
        "User's sister is Mia": "memory-2",
        "User plays the cello": "memory-2",
    }
    assert [r.schema_name for r in scripted.chat_requests] == ["ExtractedFacts"]
    assert [len(r.inputs) for r in scripted.embedding_requests] == [4]


async def test_a_round_the_endpoint_answers_with_a_server_error_is_not_retried_one_by_one(
    world: World, gated: GatedBrain, scripted: ScriptedOpenAI
) -> None:
    """A 5xx says nothing about the messages: asking for each alone would only multiply
    the requests to an endpoint already in trouble."""
    gate = gated.hold_next()
    await world.say("ann", "ann note one")
    await gated.held.wait()
    for n in ("two", "three", "four"):
        await world.say("ann", f"ann note {n}")

    def overloaded_after_the_first(request: RecordedRequest) -> Any:
        if request.schema_name == "ExtractedFacts" and gated.brain.extractions:
            gated.brain.extraction_down = True  # 503: "the model is overloaded"
        return gated.brain(request)

    scripted.respond_with(overloaded_after_the_first)
    gate.set()  # note one is learned; the round of the other three is answered 503
    await world.settle()

    asked = [
        [said for _, said in NUMBERED.findall(request.prompt)]
        for request in scripted.chat_requests
        if request.schema_name == "ExtractedFacts"
    ]
    assert ["ann note two", "ann note three", "ann note four"] in asked
    assert not [
        messages for messages in asked if messages in (["ann note three"], ["ann note four"])
    ]
    assert [status for status, _ in await pending_and_failed(world)] == ["pending"] * 3

    gated.brain.extraction_down = False
    scripted.respond_with(gated.brain)
    await world.later(hours=1)
    assert sorted(await world.facts_of("ann")) == sorted(
        fact_text(f"ann note {n}") for n in ("one", "two", "three", "four")
    )
