"""Answering tweets: mentions of the account and tweets by target users.

Each new tweet is handled once per account: a row in ``TwitterHandled`` says
what was decided, and the newest handled id per stream is the since-id cursor,
so a restart resumes where the last run stopped. A reply is marked "replying"
with its tweets planned in the outbox (:mod:`liz.twitter.outbox`) in one
transaction, then posted; it is marked "replied" only once all its tweets are
on X. An unfinished reply (cut short, rate limited, or its fate unknown after a
timeout) is finished at the start of the next cycle, never written and posted anew;
only when X refuses its first tweet for good is the mark taken back, so it is tried
again. A reply X refuses as duplicate content (two mentions asking the same thing) is
written once more, the agent told to vary it, and only then given up. A reply whose
post call got no answer waits as :mod:`liz.twitter.outbox` says, looked for each cycle,
while other mentions are answered as usual.
Every page of new tweets is read back to the cursor before any is handled (a
storm of mentions may take several polls when X rate-limits the reading).
Tweets are handled oldest first and a cycle stops at the first failure that
may pass (X down, rate limit, LLM unavailable), so the cursor never skips an
unanswered tweet.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable
from datetime import datetime, timedelta
from functools import partial
from typing import Literal, Protocol

from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession

from liz.errors import LizError, LLMError
from liz.observe import metrics
from liz.twitter.context import BotContext
from liz.twitter.errors import (
    FATAL_ERRORS,
    TwitterDuplicate,
    TwitterError,
    TwitterNotFound,
    TwitterPostUnconfirmed,
    TwitterRateLimited,
    TwitterRejected,
    TwitterTransientError,
)
from liz.twitter.outbox import (
    REPLY_PREFIX,
    plan_thread,
    replied_tweet_id,
    reply_key,
    send_thread,
    thread_is_planned,
    unfinished_threads,
)
from liz.twitter.splitter import split_into_tweets
from liz.twitter.store import (
    MENTIONS_STREAM,
    conversation_stopped,
    is_handled,
    mark_handled,
    save_tweets,
    set_decision,
    since_id,
    target_stream,
    unmark_handled,
)
from liz.twitter.transport import Tweet
from liz.twitter.unseen_posts import UnseenPosts
from liz.types import InputObject, InputSource, InputType

logger = logging.getLogger(__name__)


class Fetch(Protocol):
    """Every tweet of a stream above the cursor (every page): a transport's timeline read."""

    def __call__(
        self, since_id: int | None, *, not_before: datetime | None
    ) -> Awaitable[list[Tweet]]: ...


class ShouldRespond(BaseModel):
    """The small model's decision about one tweet."""

    decision: Literal["RESPOND", "IGNORE", "STOP"]
    reason: str = Field(default="", description="one sentence")


def _is_passing(error: Exception) -> bool:
    """Failures that say nothing about the tweet itself: retry it later, never give up on it."""
    if isinstance(error, TwitterTransientError | TwitterRateLimited):
        return True
    return isinstance(error, LLMError) and error.status >= 503


class ReplyCycle:
    """Answers what is new in each stream; keeps failure counts across cycles of one run."""

    def __init__(self, ctx: BotContext, *, started_at: datetime) -> None:
        self.ctx = ctx
        # With no cursor yet (first run), older tweets are not answered: mentions from
        # before first_run_max_age_hours, a target user's tweets from before this run.
        self.oldest_mention = started_at - timedelta(hours=ctx.settings.first_run_max_age_hours)
        self.oldest_target_tweet = started_at - timedelta(minutes=ctx.settings.polling_interval)
        self._attempts: Counter[int] = Counter()
        self._dry_run_seen: set[int] = set()
        # Tweets taken as posted when X refused them again: looked for once per wait.
        self._unseen = UnseenPosts(ctx)

    async def run(self) -> None:
        """Finish unfinished replies, look for tweets taken as posted, then one pass over
        mentions and each target's timeline."""
        transport = self.ctx.transport
        if not self.ctx.dry_run:
            await self._finish_replies()
            await self._unseen.look()
        await self._run_stream(MENTIONS_STREAM, transport.mentions)
        for username in self.ctx.settings.target_users:
            await self._run_stream(
                target_stream(username), partial(transport.user_tweets, username)
            )

    async def _run_stream(self, stream: str, fetch: Fetch) -> None:
        ctx = self.ctx
        async with ctx.sessions() as session:
            cursor = await since_id(session, account_id=ctx.account.id, stream=stream)
        # Every page back to the cursor; with no cursor yet, back to the oldest answerable.
        not_before = self._oldest_answerable(stream) if cursor is None else None
        try:
            fetched = await fetch(cursor, not_before=not_before)
        except (TwitterNotFound, TwitterRejected) as exc:
            if stream == MENTIONS_STREAM:
                raise
            # One unreadable target user (renamed, protected) must not keep the others unread.
            logger.warning("cannot read %s: %s; check TWITTER_TARGET_USERS", stream, exc.message)
            return
        metrics.twitter("read", len(fetched))
        tweets = sorted(fetched, key=lambda t: t.id)
        for tweet in tweets:
            if tweet.author_id == ctx.account.id or tweet.id in self._dry_run_seen:
                continue
            if cursor is not None and tweet.id <= cursor:
                continue
            async with ctx.sessions() as session:
                if await is_handled(session, account_id=ctx.account.id, tweet_id=tweet.id):
                    continue
            if cursor is None and tweet.created_at < self._oldest_answerable(stream):
                await self._record(tweet, stream, "skipped")
                continue
            await self._handle_with_retries(tweet, stream)

    def _oldest_answerable(self, stream: str) -> datetime:
        return self.oldest_mention if stream == MENTIONS_STREAM else self.oldest_target_tweet

    async def _handle_with_retries(self, tweet: Tweet, stream: str) -> None:
        try:
            await self._handle(tweet, stream)
        except Exception as exc:
            # Neither a fatal error nor a passing one says anything about this tweet.
            if isinstance(exc, FATAL_ERRORS) or _is_passing(exc):
                raise
            self._attempts[tweet.id] += 1
            if isinstance(exc, TwitterNotFound) or (
                self._attempts[tweet.id] >= self.ctx.settings.max_reply_attempts
            ):
                logger.error("giving up on tweet %d: %s", tweet.id, exc)
                await self._record(tweet, stream, "failed")
                return
            raise

    async def _handle(self, tweet: Tweet, stream: str) -> None:
        ctx = self.ctx
        budgets = ctx.framework.runtime.budgets
        refusal = await budgets.refusal(ctx.agent.agent_id, str(tweet.author_id))
        if refusal is not None:  # before the should-respond call, which costs too
            budgets.log_once(f"twitter:{refusal.whose}", refusal, "Twitter: skipping tweets")
            await self._record(tweet, stream, "skipped")
            return
        async with ctx.sessions() as session:
            stopped = await conversation_stopped(
                session, account_id=ctx.account.id, conversation_id=tweet.conversation_id
            )
        if stopped:
            await self._record(tweet, stream, "ignored")
            return
        chain = await self._parent_chain(tweet)
        if ctx.settings.should_respond_check:
            choice = await self._decide(tweet, chain)
            if choice.decision != "RESPOND":
                logger.info(
                    "not answering tweet %d (%s): %s", tweet.id, choice.decision, choice.reason
                )
                decision = "stopped" if choice.decision == "STOP" else "ignored"
                await self._record(tweet, stream, decision)
                return
        texts = await self._write_reply(tweet, chain)
        if ctx.dry_run:
            logger.info("dry run: would reply to %s with %r", tweet.permanent_url, texts)
            self._dry_run_seen.add(tweet.id)
            return
        try:
            await self._plan_and_send(tweet, stream, texts)
        except TwitterDuplicate:
            # X refused the reply's first tweet as text the account already posted (two
            # mentions asking the same): written once more, asked to vary it.
            logger.info(
                "X refused the reply to tweet %d as duplicate content; rewording it", tweet.id
            )
            texts = await self._write_reply(tweet, chain, refused=" ".join(texts))
            try:
                await self._plan_and_send(tweet, stream, texts)
            except TwitterDuplicate:
                logger.error(
                    "giving up on tweet %d: X refused its reply as duplicate content twice, "
                    "even reworded",
                    tweet.id,
                )
                await self._record(tweet, stream, "failed")

    async def _write_reply(
        self, tweet: Tweet, chain: list[Tweet], refused: str | None = None
    ) -> list[str]:
        """The agent's reply, as tweets; ``refused``: its earlier reply X refused."""
        text = await self.ctx.ask_agent(self._reply_input(tweet, chain, refused))
        texts = split_into_tweets(text, self.ctx.settings.max_tweet_length)
        if not texts:
            raise LizError(f"the agent wrote an empty reply to tweet {tweet.id}")
        return texts

    async def _plan_and_send(self, tweet: Tweet, stream: str, texts: list[str]) -> None:
        # Marked "replying" with the reply's tweets planned in one transaction: from
        # here on the reply is finished, never written anew (see liz.twitter.outbox).
        ctx = self.ctx
        key = reply_key(tweet.id)
        async with ctx.sessions() as session, session.begin():
            await self._store_decision(session, tweet, stream, "replying")
            await plan_thread(session, ctx, key, texts, reply_to=tweet.id)
        await self._send_reply(key)

    async def _finish_replies(self) -> None:
        """Post the rest of replies an earlier cycle or run left unfinished."""
        ctx = self.ctx
        async with ctx.sessions() as session:
            keys = await unfinished_threads(session, account_id=ctx.account.id, prefix=REPLY_PREFIX)
        for key in keys:
            logger.info("finishing the reply to tweet %d", replied_tweet_id(key))
            try:
                await self._send_reply(key)
            except TwitterPostUnconfirmed as exc:
                # Looked for again next poll; other mentions need not wait for it.
                logger.warning("%s", exc.message)

    async def _send_reply(self, key: str) -> None:
        """Post the reply's tweets not yet on X; mark the tweet "replied" once all are out."""
        ctx = self.ctx
        tweet_id = replied_tweet_id(key)
        try:
            posted = await send_thread(ctx, key)
        except TwitterError:
            async with ctx.sessions() as session, session.begin():
                if not await thread_is_planned(session, account_id=ctx.account.id, key=key):
                    # X refused the first tweet: nothing is out, so the tweet is answered anew.
                    await unmark_handled(session, account_id=ctx.account.id, tweet_id=tweet_id)
            raise
        async with ctx.sessions() as session, session.begin():
            await set_decision(
                session,
                account_id=ctx.account.id,
                tweet_id=tweet_id,
                decision="replied",
                at=ctx.clock.now(),
            )
        self._attempts.pop(tweet_id, None)
        if posted:
            logger.info("replied to tweet %d with %d tweet(s)", tweet_id, len(posted))
        else:  # X refused it as a copy of the unanswered call's reply: it is out
            logger.info("replied to tweet %d (X does not show the reply yet)", tweet_id)
        if ctx.settings.like_replied:
            try:
                await ctx.transport.like(tweet_id)
            except LizError as exc:
                logger.warning("could not like tweet %d: %s", tweet_id, exc.message)

    async def _record(self, tweet: Tweet, stream: str, decision: str) -> None:
        """Store the tweet and what was decided about it; on dry run, remember it in memory only."""
        ctx = self.ctx
        if ctx.dry_run:
            self._dry_run_seen.add(tweet.id)
            return
        async with ctx.sessions() as session, session.begin():
            await self._store_decision(session, tweet, stream, decision)
        self._attempts.pop(tweet.id, None)

    async def _store_decision(
        self, session: AsyncSession, tweet: Tweet, stream: str, decision: str
    ) -> None:
        await save_tweets(session, [tweet])
        await mark_handled(
            session,
            account_id=self.ctx.account.id,
            tweet=tweet,
            stream=stream,
            decision=decision,
            at=self.ctx.clock.now(),
        )

    async def _parent_chain(self, tweet: Tweet) -> list[Tweet]:
        """The tweets this one answers, oldest first, up to ``thread_depth`` of them."""
        chain: list[Tweet] = []
        parent_id = tweet.in_reply_to_id
        while parent_id is not None and len(chain) < self.ctx.settings.thread_depth:
            try:
                parent = await self.ctx.transport.get_tweet(parent_id)
            except TwitterNotFound:
                break  # deleted or hidden: the context ends there
            chain.append(parent)
            parent_id = parent.in_reply_to_id
        return chain[::-1]

    async def _decide(self, tweet: Tweet, chain: list[Tweet]) -> ShouldRespond:
        ctx = self.ctx
        prompt = ctx.agent.templates.render(
            "twitter_should_respond.j2",
            name=ctx.agent.name,
            username=ctx.account.username,
            agent_context=ctx.agent.get_agent_context(),
            chain=chain,
            tweet=tweet,
        )
        return await ctx.framework.runtime.llm.structured(prompt, ShouldRespond, size="small")

    def _reply_input(
        self, tweet: Tweet, chain: list[Tweet], refused: str | None = None
    ) -> InputObject:
        ctx = self.ctx
        text = ctx.agent.templates.render(
            "twitter_reply_context.j2",
            username=ctx.account.username,
            chain=chain,
            tweet=tweet,
            refused_reply=refused,
        )
        return InputObject(
            source=InputSource.TWITTER,
            user_id=str(tweet.author_id),
            agent_id=ctx.agent.agent_id,
            room_id=str(tweet.conversation_id),
            type=InputType.TEXT_AND_IMAGE if tweet.image_urls else InputType.TEXT,
            text=text,
            image_urls=list(tweet.image_urls),
        )
