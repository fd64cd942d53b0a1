"""``liz facts queue``, ``retry``, ``give-up`` and ``discard``: the messages still to
learn from, and what to do with those the worker cannot get through.

For example::

    $ liz facts queue              # the backlog and the failed jobs, oldest first
    $ liz facts queue --failed     # only the jobs no retry could fix, with the reason
    $ liz facts retry 12 15        # try these jobs again now
    $ liz facts retry --all        # every failed job again, every waiting job now
    $ liz facts give-up 12         # stop retrying a pending job: failed, listed, the
                                   # user's later messages go on
    $ liz facts discard 12         # forget a failed job: its message is never learned from

They need the database only, not the LLM; a running liz process does the work.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from liz.cli.failing import fail
from liz.cli.session import with_session

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from liz.learning_queue.tables import LearningJobRecord


def show_queue(
    failed: Annotated[
        bool, typer.Option("--failed", help="Only jobs that failed for good, with the reason.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many jobs.")] = 50,
) -> None:
    """List the messages still to learn facts from (oldest first) and the failed ones."""
    from liz.learning_queue import jobs
    from liz.learning_queue.tables import FAILED

    async def read(session: AsyncSession) -> tuple[jobs.Backlog, list[LearningJobRecord]]:
        return await jobs.backlog(session), await jobs.list_jobs(
            session, status=FAILED if failed else None, limit=limit
        )

    found, listed = with_session(read, reading="the learning queue")
    age = found.oldest_age_seconds(datetime.now(UTC))
    oldest = f" (oldest {age:.0f} s old)" if age is not None else ""
    typer.echo(f"learning queue: {found.pending} pending{oldest}, {found.failed} failed")
    for job in listed:
        typer.echo(_line(job))


def retry(
    job_ids: Annotated[
        list[int] | None, typer.Argument(help="Job ids (from `liz facts queue`).")
    ] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="Every failed job, and every job waiting to retry.")
    ] = False,
) -> None:
    """Try jobs again now: failed ones are queued again, waiting ones skip their backoff."""
    from liz.learning_queue import jobs

    if not job_ids and not everything:
        fail("name the jobs to retry (ids from `liz facts queue`) or pass --all")
    ids = [] if everything else list(job_ids or [])

    async def change(session: AsyncSession) -> int:
        async with session.begin():
            await _refuse_unknown(session, ids)
            return await jobs.retry_now(session, datetime.now(UTC), ids)

    count = with_session(change, reading="the learning queue")
    typer.echo(f"{_jobs(count)} due now; a running liz process learns from them")


def give_up(
    job_ids: Annotated[list[int], typer.Argument(help="Pending job ids (`liz facts queue`).")],
) -> None:
    """Stop retrying pending jobs: they are failed and listed, the users' later messages go on."""
    from liz.learning_queue.failed_jobs import give_up_now

    async def change(session: AsyncSession) -> int:
        async with session.begin():
            return await give_up_now(session, datetime.now(UTC), job_ids)

    count = with_session(change, reading="the learning queue")
    typer.echo(
        f"{_jobs(count)} failed; the users' later messages are learned at their next try "
        "(`liz facts retry --all`: now). `liz facts retry` queues the failed ones again, "
        "`liz facts discard` forgets them"
    )


def discard(
    job_ids: Annotated[list[int], typer.Argument(help="Failed job ids (`liz facts queue`).")],
) -> None:
    """Delete failed jobs: their messages stay in the conversation but are never learned from."""
    from liz.learning_queue.failed_jobs import discard as discard_jobs

    async def change(session: AsyncSession) -> int:
        async with session.begin():
            return await discard_jobs(session, job_ids)

    count = with_session(change, reading="the learning queue")
    typer.echo(f"{_jobs(count)} discarded; no facts will be learned from their messages")


async def _refuse_unknown(session: AsyncSession, ids: list[int]) -> None:
    """An InputError naming every job of ``ids`` not in the queue: nothing is changed."""
    from sqlalchemy import select

    from liz.errors import InputError
    from liz.learning_queue.tables import LearningJobRecord

    found = set(
        await session.scalars(select(LearningJobRecord.id).where(LearningJobRecord.id.in_(ids)))
    )
    missing = [f"job {job_id} is not in the queue" for job_id in sorted(set(ids) - found)]
    if missing:
        raise InputError("; ".join(missing) + " (learned already?); nothing was changed")


def _jobs(count: int) -> str:
    return "1 job" if count == 1 else f"{count} jobs"


def _line(job: LearningJobRecord) -> str:
    due = "" if job.status != "pending" else f"  next try {job.next_attempt_at:%Y-%m-%d %H:%M:%S}"
    error = f"\n      {job.last_error}" if job.last_error else ""
    return (
        f"#{job.id:<6} {job.status:<7} agent {job.agent_id}, user {job.user_id}, "
        f"message {job.memory_id}, {job.attempts} failed tries{due}{error}"
    )
