"""A tweet X refused as a duplicate of its own lost post call is out: recorded once X shows it.

A post call times out after X took the tweet, and X hides it from its timelines
for longer than ``TWITTER_UNCONFIRMED_POST_WAIT_MINUTES``: the bot posts the same
text again, X refuses it as "duplicate content" (only the same text can be refused
so), and the tweet is taken as posted. Once X shows it, it is stored like any tweet
the bot posted, and the schedule counts it even before.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from liz.db.tables import TweetRecord
from liz.twitter.errors import TwitterRejected
from liz.twitter.tables import OutboxTweetRecord

# The fixture, shared with the single-bot tests (a re-export, so pytest finds it here).
from tests.test_twitter_bot import World
from tests.test_twitter_bot import world as world
from tests.test_twitter_exactly_once import long_answers, top_level_posts
from tests.test_twitter_unconfirmed import x_refusing_duplicates


async def stored_tweets(world: World) -> dict[int, str]:
    return {int(r.id): r.text for r in await world.rows(TweetRecord)}


@pytest.mark.anyio
async def test_a_post_x_called_a_duplicate_is_stored_once_x_shows_it(world: World) -> None:
    x = x_refusing_duplicates(world)
    x.time_out_after_accepting(unseen_for=timedelta(hours=3))
    await world.start(world.bot(post_immediately=True, unconfirmed_post_wait_minutes=5))
    await world.clock.advance(hours=1)
    assert x.calls.count("post") == 2  # sent again after the wait, the same text: refused
    assert await stored_tweets(world) == {}  # X does not show it yet: nothing to store
    await world.clock.advance(hours=2, minutes=30)
    [post] = top_level_posts(x)
    assert await stored_tweets(world) == {post.id: "Post number 1 about tea."}
    [row] = await world.rows(OutboxTweetRecord)
    assert (row.state, row.tweet_id) == ("posted", str(post.id))
    assert x.calls.count("post") == 2  # found, never posted a third time


@pytest.mark.anyio
async def test_a_reply_x_called_a_duplicate_is_stored_once_x_shows_it(world: World) -> None:
    x = x_refusing_duplicates(world)
    mention = x.tweet_as("bob", "@ada_bot are you there?")
    x.time_out_after_accepting(unseen_for=timedelta(hours=3))
    await world.start(world.bot(unconfirmed_post_wait_minutes=5))
    await world.clock.advance(hours=3, minutes=30)
    [reply] = x.replies_to(mention.id)
    assert await stored_tweets(world) == {
        mention.id: mention.text,
        reply.id: "Thanks @bob, tea is good.",
    }
    [row] = await world.rows(OutboxTweetRecord)
    assert row.tweet_id == str(reply.id)


@pytest.mark.anyio
async def test_a_restart_before_x_shows_such_a_post_keeps_the_schedule(world: World) -> None:
    x = x_refusing_duplicates(world)
    x.time_out_after_accepting(unseen_for=timedelta(hours=3))
    first = await world.start(world.bot(post_immediately=True, unconfirmed_post_wait_minutes=5))
    await world.clock.advance(minutes=30)
    await first.stop()
    await world.start(world.bot(post_immediately=True, unconfirmed_post_wait_minutes=5))
    await world.clock.advance(hours=1)
    # The post X called a duplicate is 1.5 hours old: not another one at once.
    assert [t.text for t in top_level_posts(x)] == ["Post number 1 about tea."]
    await world.clock.advance(hours=3)
    assert [t.text for t in top_level_posts(x)] == [
        "Post number 1 about tea.",
        "Post number 2 about tea.",
    ]


@pytest.mark.anyio
async def test_a_thread_cut_where_x_never_showed_a_tweet_stores_it_when_x_does(
    world: World,
) -> None:
    x = x_refusing_duplicates(world)
    long_answers(world)
    mention = x.tweet_as("bob", "@ada_bot seven parts please")
    x.time_out_after_accepting(after=2, unseen_for=timedelta(hours=2))
    await world.start(world.bot(unconfirmed_post_wait_minutes=5))
    await world.clock.advance(hours=1)
    assert len(x.posts) == 3  # the thread ended at its 3rd tweet: X did not show it in time
    await world.clock.advance(hours=2)
    third = x.posts[2]
    assert (await stored_tweets(world)).get(third.id) == third.text
    rows = sorted(await world.rows(OutboxTweetRecord), key=lambda r: r.position)
    assert [r.tweet_id for r in rows[:3]] == [str(t.id) for t in x.posts]
    assert [r.state for r in rows[3:]] == ["dropped"] * 4
    assert mention.id in await stored_tweets(world)


FORBIDDEN = "You are not permitted to perform this action."


@pytest.mark.anyio
async def test_a_post_refused_for_good_after_a_lost_call_is_not_written_anew(
    world: World,
) -> None:
    x = world.x
    x.time_out_after_accepting(unseen_for=timedelta(hours=3))
    x.fail_next(TwitterRejected(FORBIDDEN), operations=("post",))
    await world.start(world.bot(post_immediately=True, unconfirmed_post_wait_minutes=5))
    await world.clock.advance(hours=1)
    # The lost call may have put it on X: no second, different post minutes later.
    assert [t.text for t in top_level_posts(x)] == ["Post number 1 about tea."]
    assert world.brain.posts == 1
    await world.clock.advance(hours=2, minutes=30)
    [post] = top_level_posts(x)
    assert await stored_tweets(world) == {post.id: "Post number 1 about tea."}


@pytest.mark.anyio
async def test_a_reply_refused_for_good_after_a_lost_call_is_not_answered_anew(
    world: World,
) -> None:
    x = world.x
    mention = x.tweet_as("bob", "@ada_bot are you there?")
    x.time_out_after_accepting(unseen_for=timedelta(hours=3))
    x.fail_next(TwitterRejected(FORBIDDEN), operations=("post",))
    await world.start(world.bot(unconfirmed_post_wait_minutes=5))
    await world.clock.advance(hours=1)
    assert len(x.replies_to(mention.id)) == 1
    assert len(world.reply_prompts()) == 1
