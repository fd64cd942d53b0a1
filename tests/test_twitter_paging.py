"""A storm of mentions is read page by page back to the cursor and answered once each, in order."""

from __future__ import annotations

from datetime import timedelta

import pytest

from liz.twitter.tables import HandledTweetRecord

# The fixture, shared with the single-bot tests (a re-export, so pytest finds it here).
from tests.test_twitter_bot import World
from tests.test_twitter_bot import world as world


def replied_to(world: World) -> list[int | None]:
    return [t.in_reply_to_id for t in world.x.posts]


@pytest.mark.anyio
async def test_250_paged_mentions_are_all_answered_once_in_order(world: World) -> None:
    x = world.x
    x.page_size = 10
    # Answering 250 mentions in one cycle takes a while on a busy machine: give the clock
    # more real time to see the bot asleep again (a bound on waiting, not on speed).
    world.clock.timeout = 600
    first = x.tweet_as("bob", "@ada_bot hello")
    await world.start(world.bot(should_respond_check=False))
    assert replied_to(world) == [first.id]  # the cursor is now at bob's mention

    storm = [x.tweet_as(f"fan{n}", f"@ada_bot question number {n}") for n in range(250)]
    x.limit_rate(("mentions",), calls=10)  # 25 pages to read, 10 pages per 15 minutes
    await world.clock.advance(minutes=5)
    # The next poll read 10 pages and was stopped by the rate limit: nothing is answered
    # until every page back to the cursor is read, so the cursor cannot skip the rest.
    assert replied_to(world) == [first.id]
    await world.clock.advance(minutes=15)
    assert replied_to(world) == [first.id]
    await world.clock.advance(minutes=40)
    assert replied_to(world) == [first.id] + [m.id for m in storm]
    assert all(t.text.startswith(f"Thanks @fan{n},") for n, t in enumerate(x.posts[1:]))
    rows = await world.rows(HandledTweetRecord)
    assert sorted(int(r.tweet_id) for r in rows if r.decision == "replied") == sorted(
        [first.id] + [m.id for m in storm]
    )


@pytest.mark.anyio
async def test_a_first_run_reads_back_to_the_oldest_answerable_mention(world: World) -> None:
    x = world.x
    x.page_size = 7
    old = [x.tweet_as(f"old{n}", f"@ada_bot old question {n}") for n in range(5)]
    await world.clock.advance(hours=25)  # older than TWITTER_FIRST_RUN_MAX_AGE_HOURS (24)
    fresh = [x.tweet_as(f"fan{n}", f"@ada_bot question {n}") for n in range(30)]
    await world.start(world.bot(should_respond_check=False))
    assert replied_to(world) == [m.id for m in fresh]
    handled = {int(r.tweet_id): r.decision for r in await world.rows(HandledTweetRecord)}
    # Reading stopped at the page that reached them: some old ones were seen and skipped.
    assert {handled.get(m.id) for m in old} <= {"skipped", None}
    assert "skipped" in {handled.get(m.id) for m in old}


@pytest.mark.anyio
async def test_every_page_of_a_target_users_tweets_is_answered(world: World) -> None:
    x = world.x
    x.page_size = 4
    carol = x.user("carol")
    await world.start(world.bot(target_users=["carol"], should_respond_check=False))
    tweets = [x.tweet_as("carol", f"Thought number {n} about tea") for n in range(23)]
    x.limit_rate(("user_tweets",), calls=2, per=timedelta(minutes=15))
    await world.clock.advance(hours=2)
    assert replied_to(world) == [t.id for t in tweets]
    assert {t.author_id for t in tweets} == {carol.id}
