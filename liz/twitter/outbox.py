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
  there is taken as posted;
- X's timelines lag, so not finding it proves little at first
  (:mod:`liz.twitter.lost_posts`). Until ``TWITTER_UNCONFIRMED_POST_WAIT_MINUTES``
  have passed since that call began, a miss raises
  :class:`~liz.twitter.errors.TwitterPostUnconfirmed` and nothing is posted: the caller
  looks again later (the post loop after its backoff, the reply loop each poll),
  so the lookup is made several times, spaced out. Only a lookup made after the
  wait that still finds nothing lets the tweet be posted again: a post is never
  lost, and a post X took is posted again only if X hid it for the whole wait;
- even then, X refuses the exact text the account just posted (error 187,
  "duplicate content", :class:`~liz.twitter.errors.TwitterDuplicate`): after an unknown outcome
  that refusal means the tweet is out, and it is marked posted, not dropped. Any
  other refusal for good after such a call is taken the same way: the tweet may be
  out, so it is never written anew (a second, different post).
  Its id is looked up later; a thread that goes on after it waits for that id,
  and ends there (logged as an error) if X has not shown it within twice the wait.
  Either way it is stored in ``Tweet`` once X shows it (:mod:`liz.twitter.unseen_posts`).

A thread is planned with :func:`plan_thread` in the caller's transaction, then posted
with :func:`send_thread`.
"""

from __future__ import annotations

import enum
import logging
import uuid
from datetime import datetime

from sqlalchemy import ColumnElement, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from liz.errors import LizError
from liz.observe import metrics
from liz.twitter.context import BotContext
from liz.twitter.errors import (
    TwitterDuplicate,
    TwitterError,
    TwitterNotFound,
    TwitterOutcomeUnknown,
    TwitterRejected,
)
from liz.twitter.lost_posts import (
    find_lost_post,
    id_unknown,
    look_before_posting_again,
    waiting_for_id,
)
from liz.twitter.store import save_tweets
from liz.twitter.tables import OutboxTweetRecord
from liz.twitter.transport import Tweet

logger = logging.getLogger(__name__)

REPLY_PREFIX = "reply:"
POST_PREFIX = "post:"

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
    session: AsyncSession, ctx: BotContext, key: str, texts: list[str], reply_to: int | None
) -> None:
    """Write the thread's tweets to the outbox (the caller commits), none posted yet."""
    if not texts:
        raise LizError(f"thread {key} has no tweets to post")
    at = ctx.clock.now()
    for position, text in enumerate(texts):
        session.add(
            OutboxTweetRecord(
                account_id=str(ctx.account.id),
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
        select(OutboxTweetRecord.position).where(*_thread(account_id, key)).limit(1)
    )
    return found is not None


async def send_thread(ctx: BotContext, key: str) -> list[int]:
    """Post the thread's tweets not yet on X, in order; the ids of its tweets on X.

    As the module says. If X refuses a tweet for good, a thread with tweets out ends
    there; one with none out is removed and the refusal raised, so the caller may write
    it anew. A tweet taken as out whose id is not known is left out of the ids.
    """
    async with ctx.sessions() as session:
        rows = list(
            await session.scalars(
                select(OutboxTweetRecord)
                .where(*_thread(ctx.account.id, key))
                .order_by(OutboxTweetRecord.position)
            )
        )
    if not rows:
        raise LizError(f"no thread {key!r} in the outbox of @{ctx.account.username}")
    on_x: list[int] = []
    parent = None if rows[0].reply_to is None else int(rows[0].reply_to)
    for at, row in enumerate(rows):
        if row.state == DROPPED:
            break
        if row.state == POSTED and row.tweet_id is not None:
            parent = int(row.tweet_id)
            on_x.append(parent)
            continue
        if row.state == POSTED:
            # Out (X called it a duplicate), id unknown: the next tweet needs it as parent.
            if row is rows[-1]:
                break
            found = await find_lost_post(ctx, row, parent)
            if found is None:
                if waiting_for_id(ctx, row):
                    raise id_unknown(row, len(rows))
                logger.error(
                    "thread %s cut short after %d of %d tweets: X called tweet %d a duplicate "
                    "but never showed it, so the rest cannot answer it",
                    key,
                    at + 1,
                    len(rows),
                    at + 1,
                )
                await _drop_rest(ctx, rows[at + 1])
                break
            tweet = found
        else:
            found = await look_before_posting_again(ctx, row, parent, len(rows))
            outcome = found if found is not None else await _post(ctx, row, parent, len(rows))
            if outcome is _Refused.FOR_GOOD:
                break  # the thread ends with what is out
            if outcome is _Refused.TAKEN_AS_OUT:
                if row is rows[-1]:
                    break
                raise id_unknown(row, len(rows))
            assert isinstance(outcome, Tweet)
            tweet = outcome
            if found is not None:
                logger.info(
                    "found tweet %d of %s on X already; not posting it again", tweet.id, key
                )
        await _set(ctx, row, state=POSTED, tweet_id=str(tweet.id), tweet=tweet)
        parent = tweet.id
        on_x.append(tweet.id)
    return on_x


class _Refused(enum.Enum):
    """What :func:`_post` returns when X did not post the tweet and the thread goes on."""

    FOR_GOOD = "for good"  # the thread ends before this tweet
    # Refused after an earlier call that got no answer (as a duplicate of it, or for good):
    # it is, or may be, out, and is never written anew.
    TAKEN_AS_OUT = "taken as out"


async def _post(
    ctx: BotContext, row: OutboxTweetRecord, parent: int | None, count: int
) -> Tweet | _Refused:
    """Post one tweet, or say why X did not (when earlier tweets of the thread are out)."""
    earlier_call = row.attempted_at
    # Noted before the call: if the process dies during it, the next run looks first.
    await _set(ctx, row, attempted_at=ctx.clock.now())
    try:
        posted = await ctx.transport.post(row.text, reply_to=parent)
        metrics.twitter("post")
        return posted
    except TwitterOutcomeUnknown:
        raise  # it may be on X: attemptedAt stays, and the next try looks for it first
    except TwitterDuplicate as exc:
        if earlier_call is None:
            return await _refused(ctx, row, count, exc, None)  # the agent repeated a post
        # X already has this text from the call whose answer was lost: it is out.
        logger.warning(
            "tweet %d of %d of %s: X refused it as a duplicate (%s), so the earlier post "
            "call did reach X; taken as posted, not posted again",
            row.position + 1,
            count,
            row.thread_key,
            exc.message,
        )
        await _set(ctx, row, state=POSTED, attempted_at=earlier_call)
        return _Refused.TAKEN_AS_OUT
    except TwitterError as exc:
        return await _refused(ctx, row, count, exc, earlier_call)


async def _refused(
    ctx: BotContext,
    row: OutboxTweetRecord,
    count: int,
    exc: TwitterError,
    earlier_call: datetime | None,
) -> _Refused:
    """X answered, and it did not post the tweet (this time)."""
    passing = not isinstance(exc, TwitterRejected | TwitterNotFound)
    if passing:
        # Tried again later (a rate limit, X down), with the text the outbox keeps: never
        # written anew, which would pay for the LLM again. An earlier call's outcome that
        # is still unknown is kept, so the tweet is not posted without looking first.
        await _set(ctx, row, attempted_at=earlier_call)
        raise exc
    if earlier_call is not None:
        # The earlier call may have put it on X. Dropped, it would be written anew (a
        # second, different post or reply): taken as out, lost only if it never was.
        logger.error(
            "tweet %d of %d of %s: X refused it (%s) after a post call with no answer, "
            "which may have put it on X; taken as posted, never written anew",
            *(row.position + 1, count, row.thread_key, exc.message),
        )
        await _set(ctx, row, state=POSTED, attempted_at=earlier_call)
        return _Refused.TAKEN_AS_OUT
    if row.position == 0:
        await _drop_thread(ctx, row.thread_key)
        raise exc
    logger.warning(
        "thread %s cut short after %d of %d tweets: %s",
        row.thread_key,
        row.position,
        count,
        exc.message,
    )
    await _drop_rest(ctx, row)
    return _Refused.FOR_GOOD


def _thread(account_id: int | str, key: str) -> tuple[ColumnElement[bool], ...]:
    """The where-clause that picks one account's thread."""
    return (OutboxTweetRecord.account_id == str(account_id), OutboxTweetRecord.thread_key == key)


def this_row(row: OutboxTweetRecord) -> tuple[ColumnElement[bool], ...]:
    """The where-clause that picks ``row`` (its primary key) in an update."""
    return (*_thread(row.account_id, row.thread_key), OutboxTweetRecord.position == row.position)


async def _set(
    ctx: BotContext, row: OutboxTweetRecord, *, tweet: Tweet | None = None, **values: object
) -> None:
    async with ctx.sessions() as session, session.begin():
        await session.execute(update(OutboxTweetRecord).where(*this_row(row)).values(**values))
        if tweet is not None:
            await save_tweets(session, [tweet])
    for name, value in values.items():
        setattr(row, name, value)


async def _drop_rest(ctx: BotContext, row: OutboxTweetRecord) -> None:
    async with ctx.sessions() as session, session.begin():
        await session.execute(
            update(OutboxTweetRecord)
            .where(
                *_thread(row.account_id, row.thread_key),
                OutboxTweetRecord.position >= row.position,
            )
            .values(state=DROPPED)
        )


async def _drop_thread(ctx: BotContext, key: str) -> None:
    async with ctx.sessions() as session, session.begin():
        await session.execute(delete(OutboxTweetRecord).where(*_thread(ctx.account.id, key)))
