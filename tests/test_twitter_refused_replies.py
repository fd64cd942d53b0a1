"""Replies X does not take at once: one refused as duplicate content is written once more,
the agent told to vary it, and only then given up; one refused by a rate limit keeps its
text in the outbox and is posted when X allows, never written again by the LLM."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from liz.testing.openai_server import RecordedRequest
from liz.twitter.tables import HandledTweetRecord, OutboxTweetRecord

# The fixture, shared with the single-bot tests (a re-export, so pytest finds it here).
from tests.test_twitter_bot import World
from tests.test_twitter_bot import world as world
from tests.test_twitter_unconfirmed import x_refusing_duplicates

pytestmark = pytest.mark.anyio
SAME = "Thanks @bob, tea is good."
VARIED = "Green tea, @bob, before noon."


async def decisions(world: World) -> dict[int, str]:
    return {int(r.tweet_id): r.decision for r in await world.rows(HandledTweetRecord)}


async def test_a_reply_refused_as_duplicate_is_written_once_more_varied(world: World) -> None:
    def brain(request: RecordedRequest) -> object:
        if "Write a different reply" in request.prompt:
            assert SAME in request.prompt  # the refused reply, for the model to avoid
            return VARIED
        return world.brain(request)

    world.scripted.respond_with(brain)
    x = x_refusing_duplicates(world)
    first = x.tweet_as("bob", "@ada_bot which tea?")
    second = x.tweet_as("bob", "@ada_bot which tea, again?")
    await world.start(world.bot())
    await world.clock.advance(minutes=10)
    assert [(t.in_reply_to_id, t.text) for t in x.posts] == [(first.id, SAME), (second.id, VARIED)]
    assert await decisions(world) == {first.id: "replied", second.id: "replied"}
    assert len(world.reply_prompts()) == 3  # one each, and the rewording


async def test_a_reply_refused_as_duplicate_twice_is_given_up_in_one_line(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    x = x_refusing_duplicates(world)
    first = x.tweet_as("bob", "@ada_bot which tea?")
    second = x.tweet_as("bob", "@ada_bot which tea, again?")
    with caplog.at_level(logging.INFO, logger="liz.twitter"):
        await world.start(world.bot())
        await world.clock.advance(minutes=30)  # later polls do not try it again
    assert [t.in_reply_to_id for t in x.posts] == [first.id]
    assert await decisions(world) == {first.id: "replied", second.id: "failed"}
    assert len(world.reply_prompts()) == 3
    given_up = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in given_up] == [
        f"giving up on tweet {second.id}: X refused its reply as duplicate content twice, "
        "even reworded"
    ]


async def test_a_rate_limited_reply_keeps_its_text_and_is_posted_when_allowed(
    world: World,
) -> None:
    x = world.x
    mentions = [x.tweet_as(user, f"@ada_bot tea, {user}?") for user in ("bob", "cy", "dee")]
    x.rate_limit_until(world.clock.now() + timedelta(minutes=12), operations=("post",))
    await world.start(world.bot())
    await world.clock.advance(minutes=5)
    assert x.posts == []  # the first reply waits for the limit's end
    [waiting] = await world.rows(OutboxTweetRecord)
    assert (waiting.state, waiting.text) == ("planned", "Thanks @bob, tea is good.")
    await world.clock.advance(minutes=15)
    assert sorted(t.in_reply_to_id for t in x.posts) == sorted(m.id for m in mentions)
    assert len(world.reply_prompts()) == 3  # each reply written once
    assert set((await decisions(world)).values()) == {"replied"}
