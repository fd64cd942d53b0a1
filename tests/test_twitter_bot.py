"""The bot loop end to end: the fake X, the scripted LLM, a real database, virtual time."""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.agent import BaseAgent
from liz.character import Character
from liz.config import Settings
from liz.db.tables import MemoryRecord, TweetRecord
from liz.llm import LLMClient
from liz.routes import standard_routes
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.clock import ManualClock
from liz.testing.fake_twitter import FakeTwitter
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from liz.twitter.bot import TwitterBot
from liz.twitter.errors import TwitterAuthError, TwitterTransientError
from liz.twitter.settings import TwitterSettings
from liz.twitter.splitter import tweet_length
from liz.twitter.tables import HandledTweetRecord

LONG_REPLY = (
    "Here is the long answer you asked for. " * 6
    + "Docs: https://example.com/"
    + "a" * 120
    + " 日本語の説明もあります。" * 6
    + " 🎉👨\u200d👩\u200d👧" * 10
    + " and a last fragment without a full stop"
)


@dataclass
class Brain:
    """Scripted LLM answers: should-respond decisions by keyword, numbered posts, replies."""

    posts: int = 0
    decisions: dict[str, str] = field(default_factory=dict)

    def __call__(self, request: RecordedRequest) -> str | dict[str, Any]:
        prompt = request.prompt
        if request.schema_name == "ShouldRespond":
            tweet = prompt.rsplit("The new tweet, by", 1)[-1]
            for word, decision in self.decisions.items():
                if word in tweet:
                    return {"decision": decision, "reason": f"it says {word}"}
            return {"decision": "RESPOND", "reason": "it asks Ada something"}
        if "scheduled post on X" in prompt:
            self.posts += 1
            return f"Post number {self.posts} about tea."
        if "make it long" in prompt:
            return LONG_REPLY
        asker = re.findall(r"@(\w+) wrote to you", prompt)
        return f"Thanks @{asker[-1] if asker else 'you'}, tea is good."


def ada() -> BaseAgent:
    agent = BaseAgent(Character(agent_id="ada", name="Ada", system="You are Ada, a tea lover."))
    for route in standard_routes():
        agent.add_route(route)
    return agent


def bot_settings(**overrides: Any) -> TwitterSettings:
    values: dict[str, Any] = {
        "transport": "fake",
        "post_interval_hours": 4,
        "polling_interval": 5,
        "backoff_base_seconds": 30,
        "backoff_max_seconds": 600,
        "leader_retry_seconds": 30,
    }
    values.update(overrides)
    return TwitterSettings(_env_file=None, **values)  # type: ignore[call-arg]


@dataclass
class World:
    clock: ManualClock
    x: FakeTwitter
    scripted: ScriptedOpenAI
    brain: Brain
    runtime: Runtime
    agent: BaseAgent
    bots: list[TwitterBot] = field(default_factory=list)

    @property
    def sessions(self) -> async_sessionmaker[AsyncSession]:
        return self.runtime.sessions

    def bot(self, runtime: Runtime | None = None, **overrides: Any) -> TwitterBot:
        framework = build_framework(runtime or self.runtime)
        bot = TwitterBot(self.agent, framework, self.x, bot_settings(**overrides), clock=self.clock)
        self.bots.append(bot)
        return bot

    async def start(self, bot: TwitterBot, sleepers: int = 2) -> TwitterBot:
        await bot.start()
        await self.clock.wait_for_sleepers(sleepers)
        return bot

    async def rows(self, model: Any) -> list[Any]:
        async with self.sessions() as session:
            return list((await session.scalars(select(model))).all())

    def reply_prompts(self) -> list[RecordedRequest]:
        return [
            r
            for r in self.scripted.chat_requests
            if r.schema_name is None and "wrote to you" in r.prompt
        ]


@pytest.fixture
async def world(
    database_url: str,
    engine: AsyncEngine,
    scripted: ScriptedOpenAI,
    llm: LLMClient,
) -> AsyncIterator[World]:
    clock = ManualClock()
    brain = Brain()
    scripted.respond_with(brain)
    runtime = Runtime(
        settings=Settings(_env_file=None, database_url=database_url),  # type: ignore[call-arg]
        engine=engine,
        llm_client=llm,
        clock=clock,
    )
    world = World(
        clock, FakeTwitter(username="ada_bot", clock=clock), scripted, brain, runtime, ada()
    )
    try:
        yield world
    finally:
        for bot in world.bots:
            await bot.stop()
        await runtime.background.drain()


@pytest.mark.anyio
async def test_posts_every_interval_and_stores_each_post(world: World) -> None:
    await world.start(world.bot())
    await world.clock.advance(hours=3, minutes=59)
    assert world.x.posts == []
    await world.clock.advance(minutes=1)
    assert [t.text for t in world.x.posts] == ["Post number 1 about tea."]
    await world.clock.advance(hours=8)
    assert [t.text for t in world.x.posts] == [f"Post number {n} about tea." for n in (1, 2, 3)]
    stored = {r.id for r in await world.rows(TweetRecord)}
    assert stored == {str(t.id) for t in world.x.posts}


@pytest.mark.anyio
async def test_a_restart_keeps_the_posting_schedule(world: World) -> None:
    first = await world.start(world.bot(post_immediately=True))
    assert len(world.x.posts) == 1
    await first.stop()
    await world.clock.advance(hours=1)
    await world.start(world.bot(post_immediately=True))
    assert len(world.x.posts) == 1  # not again at once: the last post is 1 hour old
    await world.clock.advance(hours=3)
    assert len(world.x.posts) == 2


@pytest.mark.anyio
async def test_random_interval_posts_between_min_and_max(world: World) -> None:
    bot = world.bot(post_interval_min_hours=1, post_interval_max_hours=2)
    await world.start(bot)
    await world.clock.advance(hours=20)
    times = [t.created_at for t in world.x.posts]
    gaps = [(b - a).total_seconds() / 3600 for a, b in itertools.pairwise(times)]
    assert len(times) >= 9
    assert all(1 <= gap <= 2 for gap in gaps)
    assert len({round(gap, 3) for gap in gaps}) > 1


@pytest.mark.anyio
async def test_replies_to_each_mention_once_across_a_restart(world: World) -> None:
    x = world.x
    first_mention = x.tweet_as("bob", "@ada_bot which tea today?")
    first = await world.start(world.bot())
    assert [(t.in_reply_to_id, t.text) for t in x.posts] == [
        (first_mention.id, "Thanks @bob, tea is good.")
    ]
    await world.clock.advance(minutes=20)
    await first.stop()
    # Enough tweets that ids pass 1000: a cursor compared as text would go wrong here.
    for n in range(4):
        x.tweet_as("carol", f"unrelated {n}")
    second_mention = x.tweet_as("dave", "@ada_bot and green tea?")
    assert first_mention.id < 1000 < second_mention.id
    await world.start(world.bot())
    await world.clock.advance(minutes=20)
    assert [(t.in_reply_to_id, t.author_id) for t in x.posts] == [
        (first_mention.id, x.account.id),
        (second_mention.id, x.account.id),
    ]
    assert len(world.reply_prompts()) == 2
    handled = {(r.tweet_id, r.decision) for r in await world.rows(HandledTweetRecord)}
    assert handled == {(str(first_mention.id), "replied"), (str(second_mention.id), "replied")}


@pytest.mark.anyio
async def test_long_reply_becomes_a_thread_within_the_limit(world: World) -> None:
    mention = world.x.tweet_as("bob", "@ada_bot make it long please")
    await world.start(world.bot())
    thread = world.x.posts
    assert tweet_length(LONG_REPLY) > 2 * 240
    assert len(thread) >= 2
    assert all(tweet_length(t.text) <= 280 for t in thread)
    assert [t.in_reply_to_id for t in thread] == [mention.id] + [t.id for t in thread[:-1]]
    assert " ".join(t.text for t in thread).split() == LONG_REPLY.split()
    assert {t.conversation_id for t in thread} == {mention.conversation_id}
    assert len(await world.rows(TweetRecord)) == len(thread) + 1  # the thread and the mention


@pytest.mark.anyio
async def test_reply_sees_the_parent_chain_images_and_is_kept_in_the_conversation_room(
    world: World,
) -> None:
    x = world.x
    root = x.tweet_as("carol", "Oolong is the best tea, fight me")
    middle = x.tweet_as("dave", "Nonsense, sencha wins", reply_to=root.id)
    mention = x.tweet_as(
        "bob",
        "@ada_bot settle this",
        reply_to=middle.id,
        image_urls=("https://img.example/cup.png",),
    )
    await world.start(world.bot(thread_depth=1))
    [prompt] = world.reply_prompts()
    assert "sencha wins" in prompt.prompt
    assert "Oolong" not in prompt.prompt  # beyond thread_depth=1
    assert prompt.image_urls == ["https://img.example/cup.png"]
    memories = await world.rows(MemoryRecord)
    bob = x.user("bob")
    assert {(m.user_id, m.room_id) for m in memories} == {(str(bob.id), str(root.id))}
    assert [t.in_reply_to_id for t in x.posts] == [mention.id]


@pytest.mark.anyio
async def test_small_model_can_ignore_a_tweet_or_stop_a_thread(world: World) -> None:
    x = world.x
    world.brain.decisions = {"buy followers": "IGNORE", "stop replying": "STOP"}
    spam = x.tweet_as("spammer", "@ada_bot buy followers now")
    stop = x.tweet_as("bob", "@ada_bot stop replying to me")
    bot = await world.start(world.bot())
    later = x.tweet_as("bob", "@ada_bot hello again", reply_to=stop.id)
    await world.clock.advance(minutes=5)
    assert x.posts == []
    decisions = [r for r in world.scripted.chat_requests if r.schema_name == "ShouldRespond"]
    assert len(decisions) == 2  # the stopped thread's later tweet was not even asked about
    assert {r.model for r in decisions} == {"scripted-small"}
    handled = {int(r.tweet_id): r.decision for r in await world.rows(HandledTweetRecord)}
    assert handled == {spam.id: "ignored", stop.id: "stopped", later.id: "ignored"}
    await bot.stop()


@pytest.mark.anyio
async def test_target_users_are_answered_without_a_mention(world: World) -> None:
    x = world.x
    old = x.tweet_as("carol", "An old thought about tea")
    await world.clock.advance(hours=1)
    await world.start(world.bot(target_users=["Carol"]))
    fresh = x.tweet_as("carol", "Is matcha worth it?")
    x.tweet_as("dave", "not a target")
    await world.clock.advance(minutes=5)
    assert [t.in_reply_to_id for t in x.posts] == [fresh.id]
    handled = {int(r.tweet_id): r.decision for r in await world.rows(HandledTweetRecord)}
    assert handled == {old.id: "skipped", fresh.id: "replied"}


@pytest.mark.anyio
async def test_rate_limit_waits_until_the_reported_reset(world: World) -> None:
    x = world.x
    x.rate_limit_until(world.clock.now() + timedelta(minutes=12), operations=("mentions",))
    await world.start(world.bot())
    mention = x.tweet_as("bob", "@ada_bot hi")
    await world.clock.advance(minutes=12)
    assert x.posts == []  # not at the 5 and 10 minute polls: the limit holds until 12:00
    assert x.calls.count("mentions") == 1
    await world.clock.advance(seconds=1)
    assert [t.in_reply_to_id for t in x.posts] == [mention.id]


@pytest.mark.anyio
async def test_outage_backs_off_and_recovers_without_double_posting(world: World) -> None:
    x = world.x
    mention = x.tweet_as("bob", "@ada_bot are you there?")
    x.go_down()
    await world.start(world.bot(post_immediately=True), sleepers=1)
    await world.clock.advance(minutes=30)
    assert x.posts == []
    failed_calls = len(x.calls)
    assert 3 <= failed_calls <= 12  # backing off, not hammering every second
    x.come_back()
    await world.clock.advance(minutes=10)  # the backoff is capped at 10 minutes
    await world.clock.wait_for_sleepers(2)  # both loops started and are idle again
    assert sorted(t.in_reply_to_id or 0 for t in x.posts) == [0, mention.id]
    x.fail_next(TwitterTransientError("blip"), operations=("post",))
    await world.clock.advance(hours=4, minutes=15)
    assert len([t for t in x.posts if t.in_reply_to_id is None]) == 2


@pytest.mark.anyio
async def test_dry_run_generates_but_posts_and_marks_nothing(world: World) -> None:
    x = world.x
    mention = x.tweet_as("bob", "@ada_bot dry?")
    await world.start(world.bot(dry_run=True, post_immediately=True))
    await world.clock.advance(hours=5)
    assert x.posts == []
    assert world.brain.posts == 2  # generated at start and after 4 hours
    assert len(world.reply_prompts()) == 1  # generated once, not every poll
    assert await world.rows(HandledTweetRecord) == []
    assert await world.rows(TweetRecord) == []
    assert await world.rows(MemoryRecord) == []  # nothing the agent would remember later
    for bot in world.bots:
        await bot.stop()
    await world.start(world.bot())
    assert [t.in_reply_to_id for t in x.posts] == [mention.id]


@pytest.mark.anyio
async def test_dry_run_writes_its_first_post_at_once(world: World) -> None:
    await world.start(world.bot(dry_run=True))  # no post_immediately: the interval is 4 hours
    assert world.brain.posts == 1
    await world.clock.advance(hours=4)
    assert world.brain.posts == 2
    assert world.x.posts == []
    assert await world.rows(TweetRecord) == []


@pytest.mark.anyio
async def test_bad_credentials_stop_the_bot_with_the_error(world: World) -> None:
    world.x.fail_next(TwitterAuthError("invalid token"), operations=("me",))
    bot = world.bot()
    with pytest.raises(TwitterAuthError, match="invalid token"):
        await bot.run()
    assert bot.failure is not None
    assert not bot.running
