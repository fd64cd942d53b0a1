"""The in-memory X that tests and ``--dry-run`` use behaves like X where the bot relies on it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from liz.testing.clock import ManualClock
from liz.testing.fake_twitter import FakeTwitter
from liz.twitter.errors import (
    TwitterDuplicate,
    TwitterNotFound,
    TwitterOutcomeUnknown,
    TwitterRateLimited,
    TwitterRejected,
    TwitterTransientError,
)
from liz.twitter.transport import TwitterTransport


def test_fake_is_a_transport() -> None:
    assert isinstance(FakeTwitter(), TwitterTransport)


@pytest.mark.anyio
async def test_mentions_are_new_tweets_naming_the_bot_or_replying_to_it() -> None:
    x = FakeTwitter(username="ada_bot")
    post = await x.post("Hello from Ada")
    first = x.tweet_as("bob", "@ada_bot hi")
    x.tweet_as("carol", "nothing to do with the bot")
    reply = x.tweet_as("dave", "nice post", reply_to=post.id)
    found = await x.mentions(None)
    assert [t.id for t in found] == [reply.id, first.id]  # newest first
    assert [t.id for t in await x.mentions(first.id)] == [reply.id]
    assert reply.conversation_id == post.id


@pytest.mark.anyio
async def test_ids_cross_a_power_of_ten_and_compare_as_numbers() -> None:
    x = FakeTwitter(username="ada_bot")
    tweets = [x.tweet_as("bob", f"@ada_bot number {n}") for n in range(8)]
    assert tweets[0].id < 1000 <= tweets[-1].id
    newest_first = await x.mentions(tweets[3].id)
    assert [t.id for t in newest_first] == [t.id for t in reversed(tweets[4:])]


@pytest.mark.anyio
async def test_posts_over_the_weighted_limit_are_refused() -> None:
    x = FakeTwitter()
    with pytest.raises(TwitterRejected, match="1 to 280"):
        await x.post("日本" * 71)  # 142 CJK characters weigh 284
    assert x.posts == []


@pytest.mark.anyio
async def test_scripted_failures_outage_and_rate_limit() -> None:
    x = FakeTwitter()
    reset = datetime(2025, 1, 1, 13, 0, tzinfo=UTC)
    x.rate_limit_until(reset, operations=("mentions",))
    await x.post("posting still works")
    with pytest.raises(TwitterRateLimited) as caught:
        await x.mentions(None)
    assert caught.value.reset_at == reset
    assert await x.mentions(None) == []
    x.go_down()
    with pytest.raises(TwitterTransientError):
        await x.me()
    x.come_back()
    assert (await x.me()).username == "liz_bot"
    with pytest.raises(TwitterNotFound):
        await x.get_tweet(12345)
    with pytest.raises(ValueError, match="unknown operations"):
        x.fail_next(TwitterTransientError("x"), operations=("tweet",))


@pytest.mark.anyio
async def test_timelines_are_read_page_by_page_and_resume_after_a_rate_limit() -> None:
    clock = ManualClock(datetime(2025, 1, 1, 12, 0, tzinfo=UTC))
    x = FakeTwitter(username="ada_bot", clock=clock, page_size=3)
    cursor = x.tweet_as("bob", "@ada_bot the one already answered")
    storm = [x.tweet_as("bob", f"@ada_bot number {n}") for n in range(10)]
    x.limit_rate(("mentions",), calls=2)
    with pytest.raises(TwitterRateLimited) as caught:
        await x.mentions(cursor.id)
    assert caught.value.reset_at == clock.now() + timedelta(minutes=15)
    await clock.advance(minutes=15)
    found = await x.mentions(cursor.id)
    assert [t.id for t in found] == [t.id for t in reversed(storm)]
    # 2 pages, 1 refused, then the 2 pages left: the pages read before the limit were kept.
    assert x.calls.count("mentions") == 5


@pytest.mark.anyio
async def test_a_post_can_time_out_after_x_took_it() -> None:
    x = FakeTwitter(username="ada_bot")
    x.time_out_after_accepting(after=1)
    first = await x.post("one")
    with pytest.raises(TwitterOutcomeUnknown):
        await x.post("two", reply_to=first.id)
    assert [t.text for t in x.posts] == ["one", "two"]
    assert [t.text for t in await x.own_tweets(None)] == ["two", "one"]
    x.fail_next(TwitterOutcomeUnknown("dropped before X got it"), operations=("post",))
    with pytest.raises(TwitterOutcomeUnknown):
        await x.post("three")
    assert len(x.posts) == 2


@pytest.mark.anyio
async def test_a_post_x_took_can_stay_off_its_timelines_for_a_while() -> None:
    clock = ManualClock(datetime(2025, 1, 1, 12, 0, tzinfo=UTC))
    x = FakeTwitter(username="ada_bot", clock=clock)
    mention = x.tweet_as("bob", "@ada_bot hi")
    x.time_out_after_accepting(unseen_for=timedelta(minutes=10))
    with pytest.raises(TwitterOutcomeUnknown):
        await x.post("hello bob", reply_to=mention.id)
    [reply] = x.posts  # it is on X...
    assert await x.own_tweets(None) == []  # ...but X's timelines do not show it yet
    assert (await x.get_tweet(reply.id)).text == "hello bob"
    await clock.advance(minutes=10)
    assert [t.id for t in await x.own_tweets(None)] == [reply.id]
    with pytest.raises(ValueError, match="must not be negative"):
        x.time_out_after_accepting(unseen_for=timedelta(minutes=-1))


@pytest.mark.anyio
async def test_x_can_refuse_a_text_the_account_already_posted() -> None:
    x = FakeTwitter(refuse_duplicates=True)
    await x.post("same words")
    with pytest.raises(TwitterDuplicate, match="duplicate content"):
        await x.post("same words")
    await x.post("other words")
    assert [t.text for t in x.posts] == ["same words", "other words"]
    assert isinstance(TwitterDuplicate("x"), TwitterRejected)
