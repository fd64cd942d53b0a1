"""Tweets taken as posted when X refused them again: looked for until X shows them.

Such a tweet's outbox row is "posted" with no tweet id (:mod:`liz.twitter.outbox`).
A thread that goes on after it looks for it itself (its next tweet must answer it);
one that ends with it would otherwise never reach ``Tweet``, and the schedule would
not count it after a restart. :class:`UnseenPosts` looks for these among the
account's own tweets at most once per wait (each lookup reads the timeline back to
the lost call, so they are spaced out for X's rate limits) and records each one
found. One not shown within :data:`LOOKED_FOR` stays in the outbox, where
``liz twitter outbox`` shows it.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import func, select, update

from liz.twitter.context import BotContext
from liz.twitter.errors import TwitterAuthError, TwitterError
from liz.twitter.lost_posts import find_lost_post
from liz.twitter.outbox import PLANNED, POST_PREFIX, POSTED, this_row
from liz.twitter.store import save_tweets
from liz.twitter.tables import OutboxTweetRecord
from liz.twitter.transport import Tweet

logger = logging.getLogger(__name__)

# A tweet to look for, and the tweet it answers (None for a new post).
ToLookFor = tuple[OutboxTweetRecord, int | None]

# How long after its first, lost call a tweet taken as posted is looked for. X's
# timelines lag by minutes, rarely hours; one not shown in a day will not be.
LOOKED_FOR = timedelta(days=1)


class UnseenPosts:
    """Finds and records the account's tweets taken as posted when X refused them again;
    remembers when it last looked, so lookups are spaced by the wait however often it is
    called."""

    def __init__(self, ctx: BotContext) -> None:
        self.ctx = ctx
        self._last_look: datetime | None = None

    async def look(self) -> int:
        """Look for them on X if a lookup is due; how many were found and recorded.

        X failing here (down, rate limited) is logged and waited out until the next
        lookup: it must not hold up the replies of the cycle that calls this.
        """
        ctx = self.ctx
        now = ctx.clock.now()
        spacing = timedelta(minutes=ctx.settings.unconfirmed_post_wait_minutes)
        if ctx.dry_run or (self._last_look is not None and now < self._last_look + spacing):
            return 0
        self._last_look = now
        found = 0
        for row, parent in await _unseen(ctx, since=now - LOOKED_FOR):
            try:
                tweet = await find_lost_post(ctx, row, parent)
            except TwitterAuthError:
                raise
            except TwitterError as exc:
                logger.warning(
                    "cannot look for tweet %d of %s on X: %s; looking again later",
                    row.position + 1,
                    row.thread_key,
                    exc.message,
                )
                return found
            if tweet is not None:
                await record_found(ctx, row, tweet)
                found += 1
        return found


async def _unseen(ctx: BotContext, *, since: datetime) -> list[ToLookFor]:
    """Each tweet to look for and the tweet it answers: "posted" with no id, first called
    after ``since``, and with no tweet after it in its thread still to post (the thread
    looks for those itself, before posting the next)."""
    record = OutboxTweetRecord
    account = str(ctx.account.id)
    async with ctx.sessions() as session:
        keys = select(record.thread_key).where(
            record.account_id == account,
            record.state == POSTED,
            record.tweet_id.is_(None),
            record.attempted_at >= since,
        )
        rows = list(
            await session.scalars(
                select(record)
                .where(record.account_id == account, record.thread_key.in_(keys))
                .order_by(record.thread_key, record.position)
            )
        )
    found: list[ToLookFor] = []
    for at, row in enumerate(rows):
        if row.state != POSTED or row.tweet_id is not None or row.attempted_at is None:
            continue
        if row.attempted_at < since:
            continue
        thread = [r for r in rows if r.thread_key == row.thread_key]
        if any(r.position > row.position and r.state == PLANNED for r in thread):
            continue
        if row.position == 0:
            parent = None if row.reply_to is None else int(row.reply_to)
        else:
            before = rows[at - 1]
            if before.tweet_id is None:
                continue  # it answers a tweet X has not shown either: that one first
            parent = int(before.tweet_id)
        found.append((row, parent))
    return found


async def record_found(ctx: BotContext, row: OutboxTweetRecord, tweet: Tweet) -> None:
    """Note which tweet X made of the row, and store the tweet, in one transaction."""
    async with ctx.sessions() as session, session.begin():
        await session.execute(
            update(OutboxTweetRecord)
            .where(*this_row(row), OutboxTweetRecord.tweet_id.is_(None))
            .values(tweet_id=str(tweet.id))
        )
        await save_tweets(session, [tweet])
    row.tweet_id = str(tweet.id)
    logger.info(
        "found tweet %d of %s on X (%s), taken as posted when X refused it again; stored",
        row.position + 1,
        row.thread_key,
        tweet.permanent_url,
    )


async def last_unseen_post_time(ctx: BotContext) -> datetime | None:
    """When the account last started a scheduled post that is out but not shown yet: the
    schedule counts it like a stored post, so a restart does not post again at once."""
    record = OutboxTweetRecord
    async with ctx.sessions() as session:
        result: datetime | None = await session.scalar(
            select(func.max(record.attempted_at)).where(
                record.account_id == str(ctx.account.id),
                record.thread_key.startswith(POST_PREFIX, autoescape=True),
                record.position == 0,
                record.state == POSTED,
                record.tweet_id.is_(None),
            )
        )
    return result
