"""The beat: a burst gone quiet is learned at the next beat (every half of
``LIZ_LEARN_AFTER_IDLE``, the same instants for every user), and the bursts learned at
one beat share one embeddings request, each keeping its own extraction and commit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.errors import LLMError
from liz.facts.shared_embedding import SharedEmbedding
from liz.facts.vectors import embed
from liz.learning_queue.health import learning_backlog
from liz.llm import LLMClient
from liz.testing.openai_server import ScriptedOpenAI
from tests.learning_world import Brain, World, fact_text, learned_counts
from tests.test_learning_bursts import world_on

pytestmark = pytest.mark.anyio


@pytest.fixture
async def brain(scripted: ScriptedOpenAI) -> Brain:
    brain = Brain()
    scripted.respond_with(brain)
    return brain


@pytest.fixture
async def world(
    engine: AsyncEngine, llm: LLMClient, brain: Brain, database_url: str
) -> AsyncIterator[World]:
    # The clock starts on a beat (09:00:00; beats every 15 s with IDLE 30).
    world = world_on(engine, llm, brain, database_url)
    yield world
    await world.runtime.learning.stop()
    await world.runtime.background.drain()


async def until_learned(brain: Brain, bursts: int) -> None:
    """Wait (real time) until that many extractions were answered, while another burst
    still gathers (so the background work cannot be drained)."""
    while len(brain.extractions) < bursts:
        await asyncio.sleep(0.01)


def learning_embeddings(scripted: ScriptedOpenAI) -> list[list[str]]:
    """The texts of each embeddings request for facts (recall embeds what users said)."""
    return [
        request.inputs
        for request in scripted.embedding_requests
        if all(text.startswith("User wrote") for text in request.inputs)
    ]


async def to(world: World, seconds: float) -> None:
    """Move the clock to ``seconds`` after 09:00:00 (bursts not due yet keep gathering)."""
    start = world.clock.now().replace(hour=9, minute=0, second=0)
    await world.clock.advance(seconds=(start - world.clock.now()).total_seconds() + seconds)


async def at(world: World, seconds: float) -> None:
    """:func:`to`, then let the learning it started finish (every burst is due by then)."""
    await to(world, seconds)
    await world.settle()


async def test_two_users_due_at_one_beat_share_one_embeddings_request(
    world: World, brain: Brain, scripted: ScriptedOpenAI, engine: AsyncEngine
) -> None:
    await to(world, 2)
    await world.say("ann", "I keep bees")  # quiet from 09:00:32: the beat at :45
    await to(world, 10)
    await world.say("bob", "I play the cello")  # quiet from 09:00:40: the same beat
    await world.say("bob", "my sister Mia lives in Oslo")

    await to(world, 44)
    assert brain.extractions == []
    await at(world, 45)
    # Each burst its own extraction; their candidate facts in one request.
    assert sorted(brain.extractions) == [
        ["I keep bees"],
        ["I play the cello", "my sister Mia lives in Oslo"],
    ]
    (texts,) = learning_embeddings(scripted)
    assert sorted(texts) == sorted(
        fact_text(said)
        for said in ("I keep bees", "I play the cello", "my sister Mia lives in Oslo")
    )
    assert await world.facts_of("ann") == [fact_text("I keep bees")]
    assert sorted(await world.facts_of("bob")) == [
        fact_text("I play the cello"),
        fact_text("my sister Mia lives in Oslo"),
    ]
    assert sorted((await learned_counts(engine)).values()) == [1, 1, 1]
    assert (await learning_backlog(world.runtime))["pending"] == 0


async def test_a_burst_is_learned_at_the_first_beat_once_quiet_not_before(
    world: World, brain: Brain
) -> None:
    await to(world, 5)
    await world.say("ann", "I keep bees")  # quiet from 09:00:35
    await to(world, 34)
    assert brain.extractions == []  # the user may go on
    await to(world, 40)
    assert brain.extractions == []  # quiet long enough: it waits for the beat
    assert (await learning_backlog(world.runtime))["pending"] == 1
    await at(world, 45)
    assert brain.extractions == [["I keep bees"]]
    assert await world.facts_of("ann") == [fact_text("I keep bees")]


async def test_another_process_learns_a_quiet_burst_at_the_same_beat(
    engine: AsyncEngine, llm: LLMClient, brain: Brain, database_url: str
) -> None:
    gathering = world_on(engine, llm, brain, database_url)
    await to(gathering, 5)
    await gathering.say("ann", "I keep bees")  # quiet from 09:00:35: the beat at :45
    other = world_on(engine, llm, brain, database_url)  # its own clock, at 09:00:00
    await other.later(seconds=40)
    assert brain.extractions == []  # the queue's job is due at the beat too
    await other.later(seconds=5)
    assert brain.extractions == [["I keep bees"]]
    await gathering.runtime.learning.stop()  # its burst is drained: already learned
    await gathering.settle()
    assert brain.extractions == [["I keep bees"]]
    assert await other.facts_of("ann") == [fact_text("I keep bees")]


async def test_a_new_message_moves_the_burst_to_a_later_beat_alone(
    world: World, brain: Brain, scripted: ScriptedOpenAI
) -> None:
    await world.say("ann", "I keep bees")  # due at the beat of 09:00:30
    await world.say("bob", "I play the cello")
    await to(world, 20)
    await world.say("bob", "I moved to Turku")  # bob's burst moves to 09:01:00
    await to(world, 30)
    await asyncio.wait_for(until_learned(brain, 1), timeout=10)
    assert brain.extractions == [["I keep bees"]]  # ann's did not wait for bob's
    await at(world, 60)
    assert brain.extractions == [["I keep bees"], ["I play the cello", "I moved to Turku"]]
    assert len(learning_embeddings(scripted)) == 2


async def test_a_failed_extraction_at_a_beat_holds_up_no_other_burst(
    world: World, brain: Brain, scripted: ScriptedOpenAI, engine: AsyncEngine
) -> None:
    brain.broken = {"I play the cello"}  # bob's extraction fails with a 500, every try
    await world.say("ann", "I keep bees")
    await world.say("bob", "I play the cello")
    await at(world, 30)  # both due at this beat
    assert await world.facts_of("ann") == [fact_text("I keep bees")]
    assert learning_embeddings(scripted) == [[fact_text("I keep bees")]]
    assert await world.facts_of("bob") == []
    assert (await learning_backlog(world.runtime))["pending"] == 1

    brain.broken = set()
    await world.later(hours=1)  # the queue retries it, as any failed try
    assert await world.facts_of("bob") == [fact_text("I play the cello")]
    assert sorted((await learned_counts(engine)).values()) == [1, 1]


async def test_a_burst_with_nothing_new_to_embed_holds_up_no_other(
    world: World, brain: Brain, scripted: ScriptedOpenAI
) -> None:
    await world.say("ann", "I keep bees")
    await at(world, 30)
    assert await world.facts_of("ann") == [fact_text("I keep bees")]

    await world.say("ann", "I keep bees")  # known already: nothing to embed
    await world.say("bob", "I play the cello")
    await at(world, 60)
    assert learning_embeddings(scripted) == [
        [fact_text("I keep bees")],
        [fact_text("I play the cello")],
    ]
    assert await world.facts_of("bob") == [fact_text("I play the cello")]
    assert (await learning_backlog(world.runtime))["pending"] == 0


async def test_seats_share_one_request_once_all_have_asked_or_left(
    scripted: ScriptedOpenAI, llm: LLMClient
) -> None:
    shared = SharedEmbedding()
    ann, bob, gone = shared.seat(), shared.seat(), shared.seat()
    gone.leave()
    asked = [ann.embed(llm, ["User keeps bees"]), bob.embed(llm, ["User a", "User b"])]
    vectors = await asyncio.gather(*asked)
    assert [request.inputs for request in scripted.embedding_requests] == [
        ["User keeps bees", "User a", "User b"]
    ]
    alone = await embed(llm, ["User keeps bees", "User a", "User b"])
    assert [v.tolist() for v in vectors[0] + vectors[1]] == [v.tolist() for v in alone]
    late = shared.seat()  # the request went out: it asks on its own
    await late.embed(llm, ["User c"])
    await ann.embed(llm, ["User d"])  # a second request of a seat: alone too
    assert [request.inputs for request in scripted.embedding_requests][-2:] == [
        ["User c"],
        ["User d"],
    ]


async def test_a_shared_request_that_fails_fails_each_seat_as_its_own_would(
    scripted: ScriptedOpenAI, llm: LLMClient
) -> None:
    shared = SharedEmbedding()
    ann, bob = shared.seat(), shared.seat()
    scripted.fail_next(503, times=10)  # down for every try the client makes
    answers = await asyncio.gather(
        ann.embed(llm, ["User keeps bees"]),
        bob.embed(llm, ["User plays the cello"]),
        return_exceptions=True,
    )
    assert [type(answer) for answer in answers] == [LLMError, LLMError]
    assert all(isinstance(answer, LLMError) and answer.upstream_status == 503 for answer in answers)
    assert {len(request.inputs) for request in scripted.embedding_requests} == {2}


async def test_a_shared_request_refused_for_its_content_is_sent_again_per_seat(
    scripted: ScriptedOpenAI, llm: LLMClient
) -> None:
    shared = SharedEmbedding()
    ann, bob = shared.seat(), shared.seat()
    scripted.fail_next(400)  # as an endpoint refuses a text it cannot take
    vectors = await asyncio.gather(
        ann.embed(llm, ["User keeps bees"]), bob.embed(llm, ["User plays the cello"])
    )
    assert [len(each) for each in vectors] == [1, 1]
    together, *alone = [request.inputs for request in scripted.embedding_requests]
    assert together == ["User keeps bees", "User plays the cello"]
    assert sorted(alone) == [["User keeps bees"], ["User plays the cello"]]
