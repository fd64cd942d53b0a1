"""Finding a post whose call got no answer, and when to give up looking and post it again.

A tweet found among the account's own is taken as posted; X's timelines lag, so a
miss raises :class:`TwitterPostUnconfirmed` until the wait is over (the rules are
:mod:`liz.twitter.outbox`'s).
"""

from __future__ import annotations

import html
import logging
import re
from datetime import timedelta

from liz.twitter.context import BotContext
from liz.twitter.errors import TwitterPostUnconfirmed
from liz.twitter.tables import OutboxTweetRecord
from liz.twitter.transport import Tweet

logger = logging.getLogger(__name__)

# How long before our clock's "the call began" X may date the tweet (clocks differ).
CLOCK_SLACK = timedelta(minutes=15)


async def look_before_posting_again(
    ctx: BotContext, row: OutboxTweetRecord, parent: int | None, count: int
) -> Tweet | None:
    """The tweet an earlier post call with no answer made, if X shows it; None when the
    tweet may be posted (no call began, or X still does not show it after the wait)."""
    if row.attempted_at is None:
        return None
    looked_at = ctx.clock.now()
    tweet = await find_lost_post(ctx, row, parent)
    if tweet is not None:
        return tweet
    wait = timedelta(minutes=ctx.settings.unconfirmed_post_wait_minutes)
    again = row.attempted_at + wait
    if looked_at < again:
        raise TwitterPostUnconfirmed(
            f"tweet {row.position + 1} of {count} of {row.thread_key}: its post call of "
            f"{row.attempted_at:%Y-%m-%d %H:%M:%S} UTC got no answer and X does not show it "
            f"yet; looking again before posting anything more (posting it again after "
            f"{again:%H:%M:%S} UTC if X never shows it; TWITTER_UNCONFIRMED_POST_WAIT_MINUTES)"
        )
    logger.warning(
        "tweet %d of %d of %s: X still does not show it %s after its post call got no "
        "answer; posting it again (X refuses it if it is out after all)",
        row.position + 1,
        count,
        row.thread_key,
        wait,
    )
    return None


def waiting_for_id(ctx: BotContext, row: OutboxTweetRecord) -> bool:
    """True while a tweet X called a duplicate may still show up: the rest of its thread
    waits for its id until twice the wait has passed since its first, lost call."""
    assert row.attempted_at is not None
    wait = timedelta(minutes=ctx.settings.unconfirmed_post_wait_minutes)
    return ctx.clock.now() < row.attempted_at + 2 * wait


def id_unknown(row: OutboxTweetRecord, count: int) -> TwitterPostUnconfirmed:
    """The error that holds up a thread after a tweet X called a duplicate, until X shows it."""
    return TwitterPostUnconfirmed(
        f"tweet {row.position + 1} of {count} of {row.thread_key} is on X (X called it a "
        "duplicate) but X does not show it yet; the rest of the thread waits for it (for "
        "twice TWITTER_UNCONFIRMED_POST_WAIT_MINUTES after the call at most)"
    )


async def find_lost_post(
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
