"""What an operator does by hand with jobs the worker cannot get through.

A job the worker keeps retrying (the endpoint fails on that one message with a server
error, which reads as an outage) holds up its user's later messages. Giving up on it
(``liz facts give-up``) marks it failed, with the reason, so they go on. A failed job
stays listed until it is retried (``liz facts retry``) or discarded (``liz facts
discard``): nothing is dropped without someone saying so.

Both refuse the whole request, changing nothing, when one of the jobs named is not in
the state the command needs, so a mistyped id never acts on a job half-way.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from liz.errors import InputError
from liz.learning_queue.jobs import MAX_ERROR_CHARS
from liz.learning_queue.tables import FAILED, PENDING, LearningJobRecord

Job = LearningJobRecord
GIVEN_UP_REASON = "given up by an operator (`liz facts give-up`)"


async def give_up_now(
    session: AsyncSession, now: datetime, ids: Sequence[int], *, reason: str = GIVEN_UP_REASON
) -> int:
    """Mark the pending jobs ``ids`` failed with ``reason`` (kept after the last error
    they met); the users' later jobs go on, due now. Returns how many.

    A worker trying one of them meanwhile finds it no longer pending and rolls its
    facts back, so a job given up on is never half learned. Later jobs tried together
    with a given-up one shared its backoff (a server error reads as an outage of every
    message); with their cause gone they do not wait it out.
    """
    found = await _check(session, ids, PENDING, "is already failed; retry or discard it")
    changed = 0
    for job in found:
        kept = f"{reason}; last error: {job.last_error}" if job.last_error else reason
        # Only while still pending: a job learned meanwhile is gone, and stays gone.
        result = await session.execute(
            update(Job)
            .where(Job.id == job.id, Job.status == PENDING)
            .values(
                status=FAILED,
                last_error=kept[:MAX_ERROR_CHARS],
                claimed_by=None,
                claimed_until=None,
                updated_at=now,
            )
        )
        changed += _rowcount(result)
        await session.execute(
            update(Job)
            .where(
                Job.agent_id == job.agent_id,
                Job.user_id == job.user_id,
                Job.status == PENDING,
                Job.id > job.id,
            )
            # Due since it was queued, as `liz facts retry` makes a job: for every
            # worker, whatever its clock says.
            .values(next_attempt_at=Job.created_at, updated_at=now)
        )
    return changed


async def discard(session: AsyncSession, ids: Sequence[int]) -> int:
    """Delete the failed jobs ``ids``: their messages stay in the conversation, but are
    never learned from. Returns how many."""
    found = await _check(session, ids, FAILED, "is pending; give up on it first (give-up)")
    result = await session.execute(
        delete(Job).where(Job.id.in_([job.id for job in found]), Job.status == FAILED)
    )
    return _rowcount(result)


def _rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


async def _check(
    session: AsyncSession, ids: Sequence[int], status: str, otherwise: str
) -> list[Job]:
    """The jobs ``ids``, locked; an ``InputError`` naming each one missing or not of
    ``status`` (what to do about it is ``otherwise``)."""
    if not ids:
        raise InputError("name at least one job (ids from `liz facts queue`)")
    wanted = sorted(set(ids))
    rows = await session.scalars(
        select(Job).where(Job.id.in_(wanted)).order_by(Job.id).with_for_update()
    )
    found = {job.id: job for job in rows}
    problems = [f"job {job_id} is not in the queue" for job_id in wanted if job_id not in found]
    problems += [f"job {job.id} {otherwise}" for job in found.values() if job.status != status]
    if problems:
        raise InputError("; ".join(problems) + "; nothing was changed")
    return list(found.values())
