"""What the outbox holds that is not confirmed on X, and why: the operator's view.

The outbox (:mod:`liz.twitter.outbox`) holds a thread until each of its tweets
is on X with a known id. A thread that stays there is held by its first tweet
that is not: one whose post call got no answer and that X does not show yet,
one taken as out because X refused a second call for it (as a duplicate, or for
good) and whose id is not known (the rest of the thread, which answers it, waits
for it), or one not posted yet (X failed, the bot stopped).
``liz twitter outbox`` prints one line per such thread (:func:`held_threads`);
``--abandon`` gives one up (:func:`abandon_thread`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import groupby

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from liz.db.tables import TweetRecord
from liz.errors import UsageError
from liz.twitter.outbox import DROPPED, PLANNED, POSTED, REPLY_PREFIX, replied_tweet_id
from liz.twitter.tables import HandledTweetRecord, OutboxTweetRecord
from liz.twitter.unseen_posts import LOOKED_FOR


@dataclass(frozen=True)
class HeldThread:
    """A thread the outbox still holds, told by its first tweet not confirmed on X."""

    account: str  # "@name" when the account's tweets are stored, else its X user id
    thread_key: str
    position: int  # of that tweet, 0 first
    count: int  # tweets in the thread
    text: str
    attempted_at: datetime | None  # when the post call that got no answer began, if one did
    held: str  # why it is held
    next_step: str  # what the bot does about it, and when


async def held_threads(
    session: AsyncSession, *, now: datetime, wait_minutes: float, account: str | None = None
) -> list[HeldThread]:
    """Every thread in the outbox with a tweet not confirmed on X, oldest plan first;
    only ``account``'s ("@name" or X user id) when it is given.

    ``wait_minutes`` is ``TWITTER_UNCONFIRMED_POST_WAIT_MINUTES``: the times the bot
    acts on are counted from it, as the bot counts them.
    """
    record = OutboxTweetRecord
    rows = await session.scalars(
        select(record)
        .where(
            record.thread_key.in_(
                select(record.thread_key).where(
                    (record.state == PLANNED)
                    | ((record.state == POSTED) & record.tweet_id.is_(None))
                )
            )
        )
        .order_by(record.account_id, record.thread_key, record.position)
    )
    names = await _account_names(session)
    wait = timedelta(minutes=wait_minutes)
    found: list[tuple[datetime, HeldThread]] = []
    for (account_id, _key), grouped in groupby(rows, key=lambda r: (r.account_id, r.thread_key)):
        if account is not None and not _is_named(account_id, account, names):
            continue
        thread = list(grouped)
        held = _first_held(thread, names.get(account_id, account_id), now, wait)
        if held is not None:
            found.append((thread[0].created_at, held))
    return [held for _, held in sorted(found, key=lambda pair: (pair[0], pair[1].thread_key))]


async def abandon_thread(
    session: AsyncSession, thread_key: str, *, account: str | None = None, now: datetime
) -> tuple[int, int]:
    """Give up on a thread: how many of its tweets will not be posted, and how many taken
    as posted (X refused a second call) are no longer looked for. Both are dropped.

    For a tweet whose outcome the bot did not know, the operator has looked on X
    (it is there, or it will not be posted). A mention whose reply is given up is
    marked "failed", so it is not answered again. Two accounts that answered the same
    mention each have a thread of that key: ``account`` ("@name" or X user id, as the
    list shows it) says whose; without it such a key is refused. The caller commits.
    """
    record = OutboxTweetRecord
    account_id = await _account_of(session, thread_key, account)
    counts: list[int] = []
    for held in (record.state == PLANNED, (record.state == POSTED) & record.tweet_id.is_(None)):
        result = await session.execute(
            update(record)
            .where(record.account_id == account_id, record.thread_key == thread_key, held)
            .values(state=DROPPED)
            .execution_options(synchronize_session=False)
        )
        counts.append(getattr(result, "rowcount", 0))
    not_posted, not_looked_for = counts
    if not_posted and thread_key.startswith(REPLY_PREFIX):
        # The mention was "replying" until all of the reply was out: now it never will be.
        await session.execute(
            update(HandledTweetRecord)
            .where(
                HandledTweetRecord.account_id == account_id,
                HandledTweetRecord.tweet_id == str(replied_tweet_id(thread_key)),
                HandledTweetRecord.decision == "replying",
            )
            .values(decision="failed", handled_at=now)
        )
    return not_posted, not_looked_for


async def _account_of(session: AsyncSession, thread_key: str, account: str | None) -> str:
    """The X user id of the account whose thread ``thread_key`` is given up."""
    found = await session.scalars(
        select(OutboxTweetRecord.account_id)
        .where(OutboxTweetRecord.thread_key == thread_key)
        .distinct()
        .order_by(OutboxTweetRecord.account_id)
    )
    holders = list(found)
    if not holders:
        raise UsageError(f"no thread {thread_key!r} in the outbox; `liz twitter outbox` lists them")
    names = await _account_names(session)
    shown = ", ".join(names.get(holder, holder) for holder in holders)
    if account is not None:
        for holder in holders:
            if _is_named(holder, account, names):
                return holder
        raise UsageError(
            f"account {account.strip()!r} has no thread {thread_key!r} in the outbox "
            f"(it is {shown}'s); `liz twitter outbox` lists them"
        )
    if len(holders) > 1:
        raise UsageError(
            f"thread {thread_key!r} is in the outbox of {len(holders)} accounts ({shown}); "
            "say whose with --account"
        )
    return holders[0]


def _is_named(account_id: str, account: str, names: dict[str, str]) -> bool:
    """Whether ``account`` (as an operator types it: X user id, "@name" or "name") is the
    account ``account_id``."""
    named = account.strip()
    return named == account_id or names.get(account_id) in (named, f"@{named}")


def _first_held(
    thread: list[OutboxTweetRecord], account: str, now: datetime, wait: timedelta
) -> HeldThread | None:
    for at, row in enumerate(thread):
        if row.state == DROPPED:
            return None  # the thread ended before this tweet
        if row.state == POSTED and row.tweet_id is not None:
            continue
        held, next_step = _why(thread, at, now, wait)
        return HeldThread(
            account=account,
            thread_key=row.thread_key,
            position=row.position,
            count=len(thread),
            text=row.text,
            attempted_at=row.attempted_at,
            held=held,
            next_step=next_step,
        )
    return None


def _why(
    thread: list[OutboxTweetRecord], at: int, now: datetime, wait: timedelta
) -> tuple[str, str]:
    """Why the tweet at ``at`` is not confirmed, and what the bot does about it next."""
    row = thread[at]
    if row.state == POSTED and row.attempted_at is not None:
        rest = sum(1 for later in thread[at + 1 :] if later.state == PLANNED)
        if rest:
            # The rest answers it: the thread waits for its id (liz.twitter.outbox).
            ends = row.attempted_at + 2 * wait
            return (
                "taken as out (X refused a 2nd call), not shown yet",
                f"the {rest} after it wait for it; the thread ends at {_at(ends)} if not shown",
            )
        until = row.attempted_at + LOOKED_FOR
        if now < until:
            return (
                "taken as out (X refused a 2nd call), not shown yet",
                f"looked for until {_at(until)}",
            )
        return (
            "taken as out (X refused a 2nd call), never shown",
            "no longer looked for; look on X, then --abandon",
        )
    if row.attempted_at is not None:
        again = row.attempted_at + wait
        if now < again:
            return (
                "post call got no answer; not on X yet",
                f"looked for; sent again after {_at(again)} if not found",
            )
        return "post call got no answer; not on X yet", "sent again (same text) at the next try"
    return "not posted yet (X failed or the bot stopped)", "posted at the bot's next try"


def _at(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


async def _account_names(session: AsyncSession) -> dict[str, str]:
    """ "@name" for each account in the outbox that has a tweet stored."""
    accounts = select(OutboxTweetRecord.account_id).distinct()
    rows = await session.execute(
        select(TweetRecord.user_id, TweetRecord.username)
        .where(TweetRecord.user_id.in_(accounts))
        .distinct()
    )
    return {user_id: f"@{username}" for user_id, username in rows}
