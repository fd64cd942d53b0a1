"""``liz twitter outbox``: the posts and replies not confirmed on X, and giving one up.

For example::

    $ liz twitter outbox                          # one line per thread held, oldest first
    $ liz twitter outbox --abandon post:3f1c...   # never post the rest of that thread

It needs the database only (``DATABASE_URL``) and ``TWITTER_UNCONFIRMED_POST_WAIT_MINUTES``
for the times it shows; not X, not the LLM, and not the bot running.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from liz.cli.failing import fail, reported
from liz.cli.session import with_session

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from liz.twitter.outbox_view import HeldThread


TEXT_WIDTH = 40
HEADER = ("ACCOUNT", "THREAD", "TWEET", "UNANSWERED CALL", "HELD BECAUSE", "NEXT", "TEXT")


def show_outbox(
    abandon: Annotated[
        str | None,
        typer.Option(
            "--abandon",
            metavar="THREAD",
            help="Give up on this thread (a THREAD from the list): its tweets not on X are "
            "never posted. Look on X first.",
        ),
    ] = None,
    account: Annotated[
        str | None,
        typer.Option(
            "--account",
            metavar="ACCOUNT",
            help="Only this account's threads (@name or X user id, as listed): to list, or "
            "to give up one whose THREAD another account has too (a reply to the same mention).",
        ),
    ] = None,
) -> None:
    """List the posts and replies not confirmed on X (why, and what the bot does next)."""
    from liz.config.loading import load_settings
    from liz.twitter.outbox_view import abandon_thread, held_threads
    from liz.twitter.settings import TwitterSettings

    now = datetime.now(UTC)
    if abandon is not None:
        thread_key = abandon.strip()
        if not thread_key:
            fail("name the thread to give up with --abandon THREAD (from `liz twitter outbox`)")

        async def give_up(session: AsyncSession) -> tuple[int, int]:
            async with session.begin():
                return await abandon_thread(session, thread_key, account=account, now=now)

        not_posted, not_looked_for = with_session(give_up, reading="the Twitter outbox")
        if not_posted == not_looked_for == 0:
            typer.echo(f"nothing to give up in {thread_key}: its tweets are on X or dropped")
            return
        given_up = [
            f"{_tweets(not_posted)} will not be posted" if not_posted else "",
            f"{_tweets(not_looked_for)} taken as posted no longer looked for"
            if not_looked_for
            else "",
        ]
        typer.echo(f"gave up {thread_key}: {', '.join(part for part in given_up if part)}")
        return

    with reported():  # a bad setting, named
        wait = load_settings(TwitterSettings).unconfirmed_post_wait_minutes

    async def read(session: AsyncSession) -> list[HeldThread]:
        return await held_threads(session, now=now, wait_minutes=wait, account=account)

    held = with_session(read, reading="the Twitter outbox")
    if not held:
        whose = "" if account is None else f" of {account.strip()}"
        typer.echo(f"the outbox holds nothing unconfirmed{whose}: every tweet planned is on X")
        return
    threads = "1 thread" if len(held) == 1 else f"{len(held)} threads"
    typer.echo(f"{threads} not confirmed on X (times in UTC):")
    typer.echo(_table([HEADER, *(_cells(thread) for thread in held)]))


def _tweets(count: int) -> str:
    return "1 tweet" if count == 1 else f"{count} tweets"


def _cells(thread: HeldThread) -> tuple[str, ...]:
    text = " ".join(thread.text.split())
    if len(text) > TEXT_WIDTH:
        text = text[: TEXT_WIDTH - 1] + "…"
    attempted = "-" if thread.attempted_at is None else f"{thread.attempted_at:%Y-%m-%d %H:%M}"
    return (
        thread.account,
        thread.thread_key,
        f"{thread.position + 1} of {thread.count}",
        attempted,
        thread.held,
        thread.next_step,
        text,
    )


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines)
