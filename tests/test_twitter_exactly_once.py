"""Posts whose outcome is unknown are never published twice; cut threads resume, not restart."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from liz.testing.fake_twitter import FakeTwitter
from liz.testing.openai_server import RecordedRequest
from liz.twitter.errors import TwitterOutcomeUnknown, TwitterTransientError
from liz.twitter.tables import HandledTweetRecord, OutboxTweetRecord
from liz.twitter.transport import Tweet

# The fixture, shared with the single-bot tests (a re-export, so pytest finds it here).
from tests.test_twitter_bot import World
from tests.test_twitter_bot import world as world

SEVEN_PARTS = " ".join(f"Part {n}: " + "tea " * 60 + "end." for n in range(1, 8))


def long_answers(world: World) -> None:
    """Replies to "seven parts please" and every scheduled post are 7-tweet threads."""

    def answer(request: RecordedRequest) -> str | dict[str, Any]:
        if request.schema_name is None and (
            "seven parts please" in request.prompt or "scheduled post on X" in request.prompt
        ):
            world.brain.posts += "scheduled post on X" in request.prompt
            return SEVEN_PARTS
        return world.brain(request)

    world.scripted.respond_with(answer)


async def decisions(world: World) -> dict[int, str]:
    return {int(r.tweet_id): r.decision for r in await world.rows(HandledTweetRecord)}


def assert_one_thread(thread: list[Tweet], answers: int | None) -> None:
    """Seven tweets, in order, each answering the one before; none posted twice."""
    assert [t.text.split(":")[0] for t in thread] == [f"Part {n}" for n in range(1, 8)]
    assert [t.in_reply_to_id for t in thread] == [answers] + [t.id for t in thread[:-1]]


def top_level_posts(x: FakeTwitter) -> list[Tweet]:
    return [t for t in x.posts if t.in_reply_to_id is None]


@pytest.mark.anyio
async def test_a_reply_that_timed_out_after_x_took_it_is_not_posted_again(world: World) -> None:
    x = world.x
    mention = x.tweet_as("bob", "@ada_bot are you there?")
    x.time_out_after_accepting()
    await world.start(world.bot())
    assert len(x.replies_to(mention.id)) == 1
    assert (await decisions(world))[mention.id] == "replying"
    await world.clock.advance(minutes=30)
    assert len(x.replies_to(mention.id)) == 1
    assert (await decisions(world))[mention.id] == "replied"
    assert len(world.reply_prompts()) == 1  # finished, not written anew
    # Its own tweets were searched before any other post call.
    after_timeout = x.calls[x.calls.index("post") + 1 :]
    assert "own_tweets" in after_timeout
    assert "post" not in after_timeout[: after_timeout.index("own_tweets")]


@pytest.mark.anyio
async def test_a_reply_that_timed_out_before_x_took_it_is_posted_once(world: World) -> None:
    x = world.x
    mention = x.tweet_as("bob", "@ada_bot are you there?")
    x.fail_next(TwitterOutcomeUnknown("connection dropped while sending"), operations=("post",))
    await world.start(world.bot())
    assert x.posts == []
    await world.clock.advance(minutes=20)
    assert x.posts == []  # still looking for it: X's timelines may lag (30 minutes by default)
    await world.clock.advance(minutes=40)
    assert [t.in_reply_to_id for t in x.posts] == [mention.id]
    assert (await decisions(world))[mention.id] == "replied"


@pytest.mark.anyio
async def test_no_post_is_tried_again_until_x_can_be_searched(world: World) -> None:
    x = world.x
    mention = x.tweet_as("bob", "@ada_bot are you there?")
    x.time_out_after_accepting()
    x.fail_next(TwitterTransientError("X is over capacity"), operations=("own_tweets",), times=5)
    await world.start(world.bot())
    await world.clock.advance(hours=1)
    assert x.calls.count("own_tweets") >= 6
    assert x.calls.count("post") == 1
    assert len(x.replies_to(mention.id)) == 1
    assert (await decisions(world))[mention.id] == "replied"


@pytest.mark.anyio
async def test_a_scheduled_post_that_timed_out_is_not_published_twice(world: World) -> None:
    x = world.x
    x.time_out_after_accepting()
    await world.start(world.bot(post_immediately=True))
    await world.clock.advance(minutes=30)
    assert [t.text for t in top_level_posts(x)] == ["Post number 1 about tea."]
    assert world.brain.posts == 1
    await world.clock.advance(hours=4)
    assert [t.text for t in top_level_posts(x)] == [
        "Post number 1 about tea.",
        "Post number 2 about tea.",
    ]


@pytest.mark.anyio
async def test_a_thread_cut_after_its_second_tweet_resumes_with_the_third(world: World) -> None:
    x = world.x
    long_answers(world)
    mention = x.tweet_as("bob", "@ada_bot seven parts please")
    x.fail_next(TwitterTransientError("X is over capacity"), operations=("post",), after=2)
    x.fail_next(TwitterTransientError("X is over capacity"), operations=("post",), times=3)
    await world.start(world.bot())
    assert len(x.posts) == 2
    assert (await decisions(world))[mention.id] == "replying"  # not before all 7 are out
    await world.clock.advance(hours=1)
    assert_one_thread(x.posts, answers=mention.id)
    assert (await decisions(world))[mention.id] == "replied"
    assert len(world.reply_prompts()) == 1
    rows = await world.rows(OutboxTweetRecord)
    assert sorted(int(r.tweet_id) for r in rows) == [t.id for t in x.posts]


@pytest.mark.anyio
async def test_a_thread_tweet_that_timed_out_after_x_took_it_is_not_doubled(world: World) -> None:
    x = world.x
    long_answers(world)
    mention = x.tweet_as("bob", "@ada_bot seven parts please")
    x.time_out_after_accepting(after=2, times=2)  # the 3rd tweet, and the 4th on the next try
    await world.start(world.bot())
    assert len(x.posts) == 3
    await world.clock.advance(hours=1)
    assert_one_thread(x.posts, answers=mention.id)
    assert (await decisions(world))[mention.id] == "replied"


@pytest.mark.anyio
async def test_a_scheduled_thread_cut_short_is_finished_not_written_anew(world: World) -> None:
    x = world.x
    long_answers(world)
    x.time_out_after_accepting(after=1)
    x.fail_next(TwitterTransientError("X is over capacity"), operations=("post",), times=4)
    await world.start(world.bot(post_immediately=True))
    await world.clock.advance(hours=1)
    assert_one_thread(x.posts, answers=None)
    assert world.brain.posts == 1


class StallingX(FakeTwitter):
    """An X that takes the 3rd post and never answers the call: the process dies mid-call."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.accepted = asyncio.Event()
        self.stall_at: int | None = 3

    async def post(self, text: str, reply_to: int | None = None) -> Tweet:
        tweet = await super().post(text, reply_to)
        if len(self.posts) == self.stall_at:
            self.accepted.set()
            await asyncio.Event().wait()
        return tweet


@pytest.mark.anyio
async def test_a_thread_cut_by_a_crash_is_finished_by_the_next_run(world: World) -> None:
    x = StallingX(username="ada_bot", clock=world.clock)
    world.x = x
    long_answers(world)
    mention = x.tweet_as("bob", "@ada_bot seven parts please")
    first = world.bot()
    await first.start()
    async with asyncio.timeout(30):
        await x.accepted.wait()
    await first.stop()
    assert len(x.posts) == 3
    x.stall_at = None
    await world.start(world.bot())
    assert_one_thread(x.posts, answers=mention.id)
    assert (await decisions(world))[mention.id] == "replied"
    assert len(world.reply_prompts()) == 1
