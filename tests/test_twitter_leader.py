"""Several bot processes on one database: one runs the loops, another takes over when it stops."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from liz.config import Settings
from liz.connectors.leader import FileLeaderLock, PostgresLeaderLock, leader_lock_for
from liz.db.engine import create_engine
from liz.errors import StorageError
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.twitter.bot import TwitterBot
from tests.test_twitter_bot import World, bot_settings

# The fixture, shared with the single-bot tests (a re-export, so pytest finds it here).
from tests.test_twitter_bot import world as world


@asynccontextmanager
async def process_runtime(world: World, database_url: str) -> AsyncIterator[Runtime]:
    """What a second process has: its own engine and pool on the same database."""
    engine = create_engine(database_url)
    try:
        yield Runtime(
            settings=Settings(_env_file=None, database_url=database_url),  # type: ignore[call-arg]
            engine=engine,
            llm_client=world.runtime.llm_client,
            clock=world.clock,
        )
    finally:
        await engine.dispose()


@pytest.mark.anyio
async def test_two_bots_on_one_database_post_and_reply_once(
    world: World, database_url: str
) -> None:
    x = world.x
    mention = x.tweet_as("bob", "@ada_bot who answers?")
    async with (
        process_runtime(world, database_url) as first_runtime,
        process_runtime(world, database_url) as second_runtime,
    ):
        first = world.bot(first_runtime, post_immediately=True)
        second = world.bot(second_runtime, post_immediately=True)
        await first.start()
        await world.clock.wait_for_sleepers(2)
        await world.start(second, sleepers=3)  # the second stands by: one sleeper more
        assert (first.is_leader, second.is_leader) == (True, False)
        await world.clock.advance(hours=8, minutes=1)
        posts = [t for t in x.posts if t.in_reply_to_id is None]
        replies = [t for t in x.posts if t.in_reply_to_id == mention.id]
        assert (len(posts), len(replies)) == (3, 1)  # at 0, 4 and 8 hours; one reply

        await first.stop()
        await world.clock.advance(seconds=30)  # the standby retries the lock
        await world.clock.wait_for_sleepers(2)
        assert second.is_leader
        later = x.tweet_as("dave", "@ada_bot still there?")
        await world.clock.advance(hours=4)
        posts = [t for t in x.posts if t.in_reply_to_id is None]
        assert len(posts) == 4  # the schedule goes on from the last post, not from scratch
        assert [t.in_reply_to_id for t in x.posts if t.in_reply_to_id] == [mention.id, later.id]
        await second.stop()


@pytest.mark.anyio
async def test_lock_is_exclusive_and_free_again_after_release(
    world: World, database_url: str
) -> None:
    async with (
        process_runtime(world, database_url) as one,
        process_runtime(world, database_url) as two,
    ):
        engine_one = one.sessions.kw["bind"]
        engine_two = two.sessions.kw["bind"]
        first = leader_lock_for(engine_one, "ada")
        second = leader_lock_for(engine_two, "ada")
        other_agent = leader_lock_for(engine_two, "bea")
        assert await first.try_acquire()
        assert not await second.try_acquire()
        assert await other_agent.try_acquire()  # another agent's loops run independently
        assert await first.still_held()
        await first.release()
        assert not await first.still_held()
        assert await second.try_acquire()
        await second.release()
        await other_agent.release()
        if engine_one.dialect.name == "sqlite":
            assert isinstance(first, FileLeaderLock)
            assert first.path.parent == Path(str(engine_one.url.database)).parent


@pytest.mark.anyio
async def test_standby_waits_out_an_unusable_lock_then_leads(world: World, tmp_path: Path) -> None:
    lock_dir = tmp_path / "created-later"
    mention = world.x.tweet_as("bob", "@ada_bot anyone?")
    bot = TwitterBot(
        world.agent,
        build_framework(world.runtime),
        world.x,
        bot_settings(),
        clock=world.clock,
        leader=FileLeaderLock(lock_dir / "ada.lock"),
    )
    world.bots.append(bot)
    await world.start(bot, sleepers=1)  # trying the lock again later, not dead
    assert (bot.running, bot.is_leader, world.x.posts) == (True, False, [])
    lock_dir.mkdir()
    await world.clock.advance(seconds=30)
    await world.clock.wait_for_sleepers(2)
    assert bot.is_leader
    assert [t.in_reply_to_id for t in world.x.posts] == [mention.id]


@pytest.mark.anyio
async def test_unreachable_postgres_lock_is_a_storage_error() -> None:
    engine = create_engine("postgresql://postgres@127.0.0.1:1/liz")
    try:
        with pytest.raises(StorageError, match="cannot reach PostgreSQL"):
            await PostgresLeaderLock(engine, "ada").try_acquire()
    finally:
        await engine.dispose()
