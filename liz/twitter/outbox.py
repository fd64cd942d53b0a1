"""Posting exactly once: each thread is planned in the database, then posted tweet by tweet.

X and the database share no transaction, and a post call can fail after X took
the tweet (a timeout, a dropped connection). So a thread (a reply or a
scheduled post) is first written to ``TwitterOutbox``, one row per tweet. Each
tweet's row notes when a post call for it began before the call is made and
which tweet X made of it after. From that:

- a thread cut short (X down after its 2nd of 7 tweets) resumes after its last
  posted tweet: :func:`send_thread` again posts tweets 3 to 7;
- a tweet whose post call began but never answered may be on X: before posting
  it again, the account's own recent tweets are searched for it, and a copy found
  there is taken as posted.

>>> async with ctx.sessions() as session, session.begin():
...     await plan_thread(session, account_id=ctx.account.id, key=key, texts=texts, ...)
>>> tweet_ids = await send_thread(ctx, key)
"""

from __future__ import annotations

import html
import logging
import re
import uuid
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from liz.errors import LizError
from liz.twitter.context import BotContext
from liz.twitter.errors import (
    TwitterError,
    TwitterNotFound,
    TwitterOutcomeUnknown,
    TwitterRejected,
)
from liz.twitter.models import OutboxTweetRecord
from liz.twitter.store import save_tweets
from liz.twitter.transport import Tweet

logger = logging.getLogger(__name__)

REPLY_PREFIX = "reply:"
POST_PREFIX = "post:"
# How long before our clock's "the call began" X may date the tweet (clocks differ).
CLOCK_SLACK = timedelta(minutes=15)

PLANNED, POSTED, DROPPED = "planned", "posted", "dropped"


def reply_key(tweet_id: int) -> str:
    """The thread key of the reply to ``tweet_id``."""
    return f"{REPLY_PREFIX}{tweet_id}"


def replied_tweet_id(key: str) -> int:
    """The tweet a reply thread answers, from its key."""
    return int(key.removeprefix(REPLY_PREFIX))


def new_post_key() -> str:
    """A fresh thread key for a scheduled post."""
    return f"{POST_PREFIX}{uuid.uuid4()}"


async def plan_thread(
    session: AsyncSession,
    *,
    account_id: int,
    key: str,
    texts: list[str],
    reply_to: int | None,
    at: datetime,
) -> None:
    """Write the thread's tweets to the outbox (the caller commits), none posted yet."""
    if not texts:
        raise LizError(f"thread {key} has no tweets to post")
    for position, text in enumerate(texts):
        session.add(
            OutboxTweetRecord(
                account_id=str(account_id),
                thread_key=key,
                position=position,
                text=text,
                reply_to=str(reply_to) if position == 0 and reply_to is not None else None,
                state=PLANNED,
                created_at=at,
            )
        )
    await session.flush()


async def unfinished_threads(session: AsyncSession, *, account_id: int, prefix: str) -> list[str]:
    """Keys of the account's threads with tweets still to post, oldest plan first."""
    record = OutboxTweetRecord
    rows = await session.execute(
        select(record.thread_key)
        .where(
            record.account_id == str(account_id),
            record.state == PLANNED,
            record.thread_key.startswith(prefix, autoescape=True),
        )
        .group_by(record.thread_key)
        .order_by(func.min(record.created_at), record.thread_key)
    )
    return [key for (key,) in rows]


async def thread_is_planned(session: AsyncSession, *, account_id: int, key: str) -> bool:
    """True while the outbox holds the thread (it is dropped when X refused its first tweet)."""
    found = await session.scalar(
        select(OutboxTweetRecord.position)
        .where(
            OutboxTweetRecord.account_id == str(account_id),
            OutboxTweetRecord.thread_key == key,
        )
        .limit(1)
    )
    return found is not None


async def send_thread(ctx: BotContext, key: str) -> list[int]:
    """Post the thread's tweets not yet on X, in order; the ids of all its tweets on X.

    A failure that leaves a tweet's fate unknown is raised with the thread kept: the
    next call looks for that tweet on X first. If X refuses a tweet for good, a
    thread with tweets out already ends there; a thread with none out is removed
    from the outbox and the refusal raised, so the caller may write it anew.
    """
    async with ctx.sessions() as session:
        rows = list(
            await session.scalars(
                select(OutboxTweetRecord)
                .where(
                    OutboxTweetRecord.account_id == str(ctx.account.id),
                    OutboxTweetRecord.thread_key == key,
                )
                .order_by(OutboxTweetRecord.position)
            )
        )
    if not rows:
        raise LizError(f"no thread {key!r} in the outbox of @{ctx.account.username}")
    on_x: list[int] = []
    parent = None if rows[0].reply_to is None else int(rows[0].reply_to)
    for row in rows:
        if row.state == DROPPED:
            break
        if row.state == POSTED and row.tweet_id is not None:
            parent = int(row.tweet_id)
            on_x.append(parent)
            continue
        tweet = await _find_lost_post(ctx, row, parent) if row.attempted_at else None
        if tweet is None:
            tweet = await _post(ctx, row, parent, len(rows))
            if tweet is None:
                break  # X refused it for good; the thread ends with what is out
        else:
            logger.info("found tweet %d of %s on X already; not posting it again", tweet.id, key)
        await _set(ctx, row, state=POSTED, tweet_id=str(tweet.id), tweet=tweet)
        parent = tweet.id
        on_x.append(tweet.id)
    return on_x


async def _post(
    ctx: BotContext, row: OutboxTweetRecord, parent: int | None, count: int
) -> Tweet | None:
    """Post one tweet; None when X refused it for good and earlier tweets are out."""
    # Noted before the call: if the process dies during it, the next run looks first.
    await _set(ctx, row, attempted_at=ctx.clock.now())
    try:
        return await ctx.transport.post(row.text, reply_to=parent)
    except TwitterOutcomeUnknown:
        raise  # it may be on X: attemptedAt stays, and the next try looks for it first
    except TwitterError as exc:
        # X answered, and it did not post the tweet.
        if row.position == 0:
            await _drop_thread(ctx, row.thread_key)
            raise
        if not isinstance(exc, TwitterRejected | TwitterNotFound):
            await _set(ctx, row, attempted_at=None)
            raise
        logger.warning(
            "thread %s cut short after %d of %d tweets: %s",
            row.thread_key,
            row.position,
            count,
            exc.message,
        )
        await _drop_rest(ctx, row)
        return None


async def _find_lost_post(
    ctx: BotContext, row: OutboxTweetRecord, parent: int | None
) -> Tweet | None:
    """The tweet X made of an earlier post call whose answer was lost, if it made one."""
    assert row.attempted_at is not None
    not_before = row.attempted_at - CLOCK_SLACK
    # A reply is newer than what it answers; a new post newer than the call minus slack.
    found = await ctx.transport.own_tweets(parent, not_before=not_before)
    for tweet in sorted(found, key=lambda t: t.id):
        if tweet.author_id != ctx.account.id or tweet.in_reply_to_id != parent:
            continue
        # The account answers a tweet once, so a reply to ``parent`` is this one; a
        # new post must also say the same and be no older than the call.
        if parent is None and (
            _comparable(tweet.text) != _comparable(row.text) or tweet.created_at < not_before
        ):
            continue
        return tweet
    return None


_URL = re.compile(r"https?://\S+")


def _comparable(text: str) -> str:
    """Text as X may echo it back: entities unescaped, links shortened, spaces collapsed."""
    return " ".join(_URL.sub("<link>", html.unescape(text)).split())


async def _set(
    ctx: BotContext, row: OutboxTweetRecord, *, tweet: Tweet | None = None, **values: object
) -> None:
    async with ctx.sessions() as session, session.begin():
        await session.execute(
            update(OutboxTweetRecord)
            .where(
                OutboxTweetRecord.account_id == row.account_id,
                OutboxTweetRecord.thread_key == row.thread_key,
                OutboxTweetRecord.position == row.position,
            )
            .values(**values)
        )
        if tweet is not None:
            await save_tweets(session, [tweet])
    for name, value in values.items():
        setattr(row, name, value)


async def _drop_rest(ctx: BotContext, row: OutboxTweetRecord) -> None:
    async with ctx.sessions() as session, session.begin():
        await session.execute(
            update(OutboxTweetRecord)
            .where(
                OutboxTweetRecord.account_id == row.account_id,
                OutboxTweetRecord.thread_key == row.thread_key,
                OutboxTweetRecord.position >= row.position,
            )
            .values(state=DROPPED)
        )


async def _drop_thread(ctx: BotContext, key: str) -> None:
    async with ctx.sessions() as session, session.begin():
        await session.execute(
            delete(OutboxTweetRecord).where(
                OutboxTweetRecord.account_id == str(ctx.account.id),
                OutboxTweetRecord.thread_key == key,
            )
        )
