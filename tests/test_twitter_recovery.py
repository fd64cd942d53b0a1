"""The bot after things go wrong mid-cycle: a crash after X took a reply, fatal errors."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from liz.testing.fake_twitter import FakeTwitter
from liz.twitter.errors import TwitterAuthError, TwitterTransientError
from liz.twitter.tables import HandledTweetRecord
from liz.twitter.transport import Tweet

# The fixture, shared with the single-bot tests (a re-export, so pytest finds it here).
from tests.test_twitter_bot import World
from tests.test_twitter_bot import world as world


class StallingX(FakeTwitter):
    """An X that takes a post and then never answers the call, like a process dying mid-call."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.accepted = asyncio.Event()
        self.stall = True

    async def post(self, text: str, reply_to: int | None = None) -> Tweet:
        tweet = await super().post(text, reply_to)
        if self.stall:
            self.accepted.set()
            await asyncio.Event().wait()
        return tweet


@pytest.mark.anyio
async def test_a_reply_x_took_is_not_posted_again_after_a_crash(world: World) -> None:
    x = StallingX(username="ada_bot", clock=world.clock)
    world.x = x
    mention = x.tweet_as("bob", "@ada_bot are you there?")
    first = world.bot()
    await first.start()
    async with asyncio.timeout(30):
        await x.accepted.wait()
    await first.stop()  # stopped after X took the reply, before "replied" was written
    assert [t.in_reply_to_id for t in x.posts] == [mention.id]

    x.stall = False
    await world.start(world.bot())
    await world.clock.advance(minutes=30)
    assert [t.in_reply_to_id for t in x.posts] == [mention.id]
    assert len(world.reply_prompts()) == 1
    # The next run found the reply on X (its post call had begun, with no answer): it is
    # taken as posted, not posted again, and the mention is now marked as answered.
    [row] = await world.rows(HandledTweetRecord)
    assert (row.tweet_id, row.decision) == (str(mention.id), "replied")


@pytest.mark.anyio
async def test_a_reply_x_refused_is_tried_again(world: World) -> None:
    x = world.x
    mention = x.tweet_as("bob", "@ada_bot hello?")
    x.fail_next(TwitterTransientError("X is over capacity"), operations=("post",))
    await world.start(world.bot())
    assert x.posts == []
    await world.clock.advance(minutes=10)
    assert [t.in_reply_to_id for t in x.posts] == [mention.id]
    [row] = await world.rows(HandledTweetRecord)
    assert (row.tweet_id, row.decision) == (str(mention.id), "replied")


@pytest.mark.anyio
async def test_revoked_credentials_stop_the_bot_without_giving_up_on_the_mention(
    world: World,
) -> None:
    x = world.x
    mention = x.tweet_as("bob", "@ada_bot hello?")
    x.fail_next(TwitterAuthError("token revoked"), operations=("post",))
    bot = world.bot(max_reply_attempts=1)
    with pytest.raises(TwitterAuthError, match="token revoked"):
        async with asyncio.timeout(30):
            await bot.run()
    # Not given up on: the reply waits in the outbox, its text kept, for the next run.
    assert [r.decision for r in await world.rows(HandledTweetRecord)] == ["replying"]
    await world.start(world.bot(max_reply_attempts=1))  # credentials fixed, started again
    assert [t.in_reply_to_id for t in x.posts] == [mention.id]
    assert len(world.reply_prompts()) == 1  # posted as written, not written again


@pytest.mark.anyio
async def test_database_trouble_at_start_is_waited_out(world: World) -> None:
    async with world.sessions() as session, session.begin():
        await session.execute(text('ALTER TABLE "Tweet" RENAME TO "TweetAway"'))
    bot = await world.start(world.bot(post_immediately=True))
    assert (bot.running, world.x.posts) == (True, [])  # no post schedule yet, but alive
    async with world.sessions() as session, session.begin():
        await session.execute(text('ALTER TABLE "TweetAway" RENAME TO "Tweet"'))
    await world.clock.advance(minutes=2)
    assert [t.text for t in world.x.posts] == ["Post number 1 about tea."]


@pytest.mark.anyio
async def test_an_unknown_target_user_does_not_keep_the_others_unanswered(world: World) -> None:
    x = world.x
    x.user("carol")
    await world.start(world.bot(target_users=["no_such_user", "carol"]))
    fresh = x.tweet_as("carol", "Is matcha worth it?")
    await world.clock.advance(minutes=5)
    assert [t.in_reply_to_id for t in x.posts] == [fresh.id]
