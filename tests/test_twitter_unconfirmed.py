"""A post X took but does not show yet is not posted again: the bot keeps looking first.

X answers a post call with a timeout after it took the tweet, and its timelines
(the account's own included) lag behind: the first lookups find nothing. Posting
again at once would put the tweet on X twice.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from liz.config.loading import load_settings
from liz.errors import UsageError
from liz.testing.fake_twitter import FakeTwitter
from liz.twitter.errors import TwitterOutcomeUnknown, TwitterTransientError
from liz.twitter.settings import TwitterSettings
from liz.twitter.tables import HandledTweetRecord, OutboxTweetRecord

# The fixture, shared with the single-bot tests (a re-export, so pytest finds it here).
from tests.test_twitter_bot import World
from tests.test_twitter_bot import world as world
from tests.test_twitter_exactly_once import assert_one_thread, long_answers, top_level_posts


def x_refusing_duplicates(world: World) -> FakeTwitter:
    """The world's X, refusing a text the bot already posted as the real X does."""
    world.x = FakeTwitter(username="ada_bot", clock=world.clock, refuse_duplicates=True)
    return world.x


async def decisions(world: World) -> dict[int, str]:
    return {int(r.tweet_id): r.decision for r in await world.rows(HandledTweetRecord)}


@pytest.mark.anyio
async def test_a_post_x_took_but_does_not_show_yet_is_not_posted_again(world: World) -> None:
    x = world.x
    x.time_out_after_accepting(unseen_for=timedelta(minutes=10))
    await world.start(world.bot(post_immediately=True))
    await world.clock.advance(hours=1)
    assert [t.text for t in top_level_posts(x)] == ["Post number 1 about tea."]
    assert world.brain.posts == 1


@pytest.mark.anyio
async def test_a_reply_x_took_but_does_not_show_yet_is_not_sent_again(world: World) -> None:
    x = world.x
    mention = x.tweet_as("bob", "@ada_bot are you there?")
    x.time_out_after_accepting(unseen_for=timedelta(minutes=10))
    await world.start(world.bot())
    await world.clock.advance(hours=1)
    assert len(x.replies_to(mention.id)) == 1
    [row] = await world.rows(HandledTweetRecord)
    assert (row.tweet_id, row.decision) == (str(mention.id), "replied")


@pytest.mark.anyio
async def test_a_post_hidden_longer_than_the_wait_is_refused_by_x_and_taken_as_posted(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="liz.twitter")
    x = x_refusing_duplicates(world)
    x.time_out_after_accepting(unseen_for=timedelta(hours=3))
    await world.start(world.bot(post_immediately=True, unconfirmed_post_wait_minutes=5))
    await world.clock.advance(hours=1)
    assert [t.text for t in top_level_posts(x)] == ["Post number 1 about tea."]
    assert x.calls.count("post") == 2  # posted again after the wait; X said it has it
    assert "refused it as a duplicate" in caplog.text
    [row] = await world.rows(OutboxTweetRecord)
    assert row.state == "posted"
    await world.clock.advance(hours=4)  # the schedule goes on
    assert [t.text for t in top_level_posts(x)] == [
        "Post number 1 about tea.",
        "Post number 2 about tea.",
    ]


@pytest.mark.anyio
async def test_a_post_that_never_reached_x_is_posted_once_the_wait_is_over(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="liz.twitter")
    x = world.x
    x.fail_next(TwitterOutcomeUnknown("connection dropped while sending"), operations=("post",))
    await world.start(world.bot(post_immediately=True, unconfirmed_post_wait_minutes=10))
    await world.clock.advance(minutes=5)
    assert x.posts == []
    assert "X does not show it yet" in caplog.text
    await world.clock.advance(minutes=30)
    assert [t.text for t in top_level_posts(x)] == ["Post number 1 about tea."]
    assert world.brain.posts == 1
    assert x.calls.count("own_tweets") >= 3  # looked for several times before posting again
    assert "posting it again" in caplog.text


@pytest.mark.anyio
async def test_a_reply_not_shown_yet_does_not_hold_up_other_mentions(world: World) -> None:
    x = world.x
    first = x.tweet_as("bob", "@ada_bot are you there?")
    x.time_out_after_accepting(unseen_for=timedelta(minutes=20))
    await world.start(world.bot())
    second = x.tweet_as("carol", "@ada_bot which tea today?")
    await world.clock.advance(minutes=10)
    assert [t.in_reply_to_id for t in x.posts] == [first.id, second.id]
    assert await decisions(world) == {first.id: "replying", second.id: "replied"}
    await world.clock.advance(minutes=30)
    assert [t.in_reply_to_id for t in x.posts] == [first.id, second.id]
    assert await decisions(world) == {first.id: "replied", second.id: "replied"}


@pytest.mark.anyio
async def test_a_reply_hidden_longer_than_the_wait_is_not_sent_twice(world: World) -> None:
    x = x_refusing_duplicates(world)
    mention = x.tweet_as("bob", "@ada_bot are you there?")
    x.time_out_after_accepting(unseen_for=timedelta(hours=3))
    await world.start(world.bot(unconfirmed_post_wait_minutes=5))
    await world.clock.advance(hours=1)
    assert len(x.replies_to(mention.id)) == 1
    assert (await decisions(world))[mention.id] == "replied"
    assert len(world.reply_prompts()) == 1


@pytest.mark.anyio
async def test_a_thread_tweet_not_shown_yet_is_not_doubled(world: World) -> None:
    x = world.x
    long_answers(world)
    mention = x.tweet_as("bob", "@ada_bot seven parts please")
    x.time_out_after_accepting(after=2, unseen_for=timedelta(minutes=10))
    await world.start(world.bot())
    assert len(x.posts) == 3
    await world.clock.advance(hours=1)
    assert_one_thread(x.posts, answers=mention.id)
    assert (await decisions(world))[mention.id] == "replied"


@pytest.mark.anyio
async def test_a_thread_goes_on_from_a_tweet_x_called_a_duplicate_once_x_shows_it(
    world: World,
) -> None:
    x = x_refusing_duplicates(world)
    long_answers(world)
    mention = x.tweet_as("bob", "@ada_bot seven parts please")
    x.time_out_after_accepting(after=2, unseen_for=timedelta(minutes=50))
    await world.start(world.bot(unconfirmed_post_wait_minutes=30))
    await world.clock.advance(minutes=45)
    assert x.calls.count("post") == 4  # the 3rd tweet sent again after the wait: a duplicate
    assert len(x.posts) == 3  # the rest waits for the 3rd tweet's id, to answer it
    assert (await decisions(world))[mention.id] == "replying"
    await world.clock.advance(hours=1)
    assert_one_thread(x.posts, answers=mention.id)
    assert x.calls.count("post") == 8  # the 3rd tweet was sent again once, and X refused it
    assert (await decisions(world))[mention.id] == "replied"
    rows = await world.rows(OutboxTweetRecord)
    assert sorted(int(r.tweet_id) for r in rows) == [t.id for t in x.posts]


def test_a_negative_wait_is_refused_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWITTER_UNCONFIRMED_POST_WAIT_MINUTES", "-5")
    with pytest.raises(UsageError, match=r"TWITTER_UNCONFIRMED_POST_WAIT_MINUTES='-5'.*0"):
        load_settings(TwitterSettings, _env_file=None)


@pytest.mark.anyio
async def test_a_restart_while_looking_does_not_post_it_again(world: World) -> None:
    x = world.x
    x.time_out_after_accepting(unseen_for=timedelta(minutes=10))
    first = await world.start(world.bot(post_immediately=True))
    await first.stop()
    await world.clock.advance(minutes=2)
    await world.start(world.bot(post_immediately=True))
    await world.clock.advance(hours=1)
    assert [t.text for t in top_level_posts(x)] == ["Post number 1 about tea."]
    assert world.brain.posts == 1
    [row] = await world.rows(OutboxTweetRecord)
    assert (row.state, row.tweet_id) == ("posted", str(x.posts[0].id))


@pytest.mark.anyio
async def test_a_failed_second_call_keeps_the_first_ones_outcome_unknown(world: World) -> None:
    x = x_refusing_duplicates(world)
    x.time_out_after_accepting(unseen_for=timedelta(hours=3))
    x.fail_next(TwitterTransientError("X is over capacity"), operations=("post",))
    await world.start(world.bot(post_immediately=True, unconfirmed_post_wait_minutes=5))
    await world.clock.advance(hours=1)
    # Posted, then sent again after the wait (over capacity), then again (a duplicate):
    # never written anew, so X's refusal of the same text still tells that it is out.
    assert [t.text for t in top_level_posts(x)] == ["Post number 1 about tea."]
    assert world.brain.posts == 1
    assert x.calls.count("post") == 3


@pytest.mark.anyio
async def test_a_thread_ends_where_x_never_shows_a_tweet_it_called_a_duplicate(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    x = x_refusing_duplicates(world)
    long_answers(world)
    mention = x.tweet_as("bob", "@ada_bot seven parts please")
    x.time_out_after_accepting(after=2, unseen_for=timedelta(days=2))
    await world.start(world.bot(unconfirmed_post_wait_minutes=5))
    await world.clock.advance(hours=1)
    assert len(x.posts) == 3  # nothing doubled, nothing answering a tweet it cannot name
    assert x.calls.count("post") == 4
    assert (await decisions(world))[mention.id] == "replied"
    rows = sorted(await world.rows(OutboxTweetRecord), key=lambda r: r.position)
    assert [r.state for r in rows] == ["posted"] * 3 + ["dropped"] * 4
    assert "X called tweet 3 a duplicate but never showed it" in caplog.text
