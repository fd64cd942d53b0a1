"""What the bot keeps in the database: tweets (Liz's ``Tweet``) and what it handled.

Tweet ids are stored as text (Liz's schema) and always compared as integers:
the since-id cursor orders by length first, then by value, which is numeric
order for decimal ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from liz.db.tables import TweetRecord
from liz.twitter.tables import HandledTweetRecord
from liz.twitter.transport import Tweet

MENTIONS_STREAM = "mentions"


def target_stream(username: str) -> str:
    """The stream name of a target user's timeline."""
    return f"user:{username.lower()}"


async def save_tweets(session: AsyncSession, tweets: Iterable[Tweet]) -> None:
    """Store tweets in ``Tweet``; one already there is left as it is."""
    for tweet in tweets:
        if await session.get(TweetRecord, str(tweet.id)) is not None:
            continue
        session.add(
            TweetRecord(
                id=str(tweet.id),
                text=tweet.text,
                user_id=str(tweet.author_id),
                username=tweet.author_username,
                conversation_id=str(tweet.conversation_id),
                in_reply_to_id=None if tweet.in_reply_to_id is None else str(tweet.in_reply_to_id),
                created_at=tweet.created_at,
                permanent_url=tweet.permanent_url,
            )
        )
    await session.flush()


async def mark_handled(
    session: AsyncSession,
    *,
    account_id: int,
    tweet: Tweet,
    stream: str,
    decision: str,
    at: datetime,
) -> None:
    """Record that ``account_id`` dealt with ``tweet`` (or update the decision); it will not
    be handled again."""
    await session.merge(
        HandledTweetRecord(
            account_id=str(account_id),
            tweet_id=str(tweet.id),
            stream=stream,
            conversation_id=str(tweet.conversation_id),
            decision=decision,
            handled_at=at,
        )
    )
    await session.flush()


async def set_decision(
    session: AsyncSession, *, account_id: int, tweet_id: int, decision: str, at: datetime
) -> None:
    """Change what was decided about a tweet the account handled."""
    await session.execute(
        update(HandledTweetRecord)
        .where(
            HandledTweetRecord.account_id == str(account_id),
            HandledTweetRecord.tweet_id == str(tweet_id),
        )
        .values(decision=decision, handled_at=at)
    )


async def unmark_handled(session: AsyncSession, *, account_id: int, tweet_id: int) -> None:
    """Forget that ``account_id`` handled the tweet, so the next cycle tries it again."""
    row = await session.get(HandledTweetRecord, (str(account_id), str(tweet_id)))
    if row is not None:
        await session.delete(row)
        await session.flush()


async def is_handled(session: AsyncSession, *, account_id: int, tweet_id: int) -> bool:
    row = await session.get(HandledTweetRecord, (str(account_id), str(tweet_id)))
    return row is not None


async def conversation_stopped(
    session: AsyncSession, *, account_id: int, conversation_id: int
) -> bool:
    """True when the account decided to stop taking part in this conversation."""
    found = await session.scalar(
        select(HandledTweetRecord.tweet_id)
        .where(
            HandledTweetRecord.account_id == str(account_id),
            HandledTweetRecord.conversation_id == str(conversation_id),
            HandledTweetRecord.decision == "stopped",
        )
        .limit(1)
    )
    return found is not None


async def since_id(session: AsyncSession, *, account_id: int, stream: str) -> int | None:
    """The largest tweet id the account handled in ``stream``: the cursor to fetch after."""
    tweet_id = HandledTweetRecord.tweet_id
    newest = await session.scalar(
        select(tweet_id)
        .where(
            HandledTweetRecord.account_id == str(account_id), HandledTweetRecord.stream == stream
        )
        .order_by(func.length(tweet_id).desc(), tweet_id.desc())
        .limit(1)
    )
    return None if newest is None else int(newest)


async def last_post_time(session: AsyncSession, *, account_id: int) -> datetime | None:
    """When the account last started a post of its own (not a reply, not a thread's tail)."""
    result: datetime | None = await session.scalar(
        select(func.max(TweetRecord.created_at)).where(
            TweetRecord.user_id == str(account_id), TweetRecord.in_reply_to_id.is_(None)
        )
    )
    return result
