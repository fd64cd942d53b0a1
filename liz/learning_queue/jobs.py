"""Reading and writing the queue of learning jobs. Each function takes a session; the
caller owns the transaction. The two statements a turn runs (queueing its job, and
making it due when the turn ends) are committed with the turn's own (liz.db.driver).

A user's jobs are learned in ``id`` order: only the *head* of a user's queue (the
pending job with no earlier pending one) can be claimed, with the ready jobs right
behind it (a *run*, learned together), and a claim lasts until ``claimedUntil``.
PostgreSQL claims with ``FOR UPDATE SKIP LOCKED``, so workers in many processes never
wait for each other; SQLite serializes writers anyway.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Delete,
    Integer,
    ScalarSelect,
    Select,
    Text,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from liz.db.driver import Bound, Statement
from liz.db.tables import MemoryRecord
from liz.db.types import UTCDateTime
from liz.errors import InputError
from liz.learning_queue.beats import learn_at
from liz.learning_queue.tables import FAILED, PENDING, LearningJobRecord
from liz.observe.learning import current_traceparent
from liz.types import Memory

Job = LearningJobRecord
MAX_ERROR_CHARS = 2000  # the reason kept for a failure: enough to act on, never a whole dump


@dataclass(frozen=True)
class Backlog:
    """What ``/health`` and ``liz facts queue`` report."""

    pending: int
    failed: int
    oldest_pending_at: datetime | None

    def oldest_age_seconds(self, now: datetime) -> float | None:
        if self.oldest_pending_at is None:
            return None
        return max((now - self.oldest_pending_at).total_seconds(), 0.0)


def _head_of(agent: Any, user: Any) -> ScalarSelect[int]:
    """The head of a user's queue (``agent``, ``user``: values, or a row's columns): the
    id of their earliest pending job."""
    earlier = aliased(Job)
    return (
        select(func.min(earlier.id))
        .where(earlier.agent_id == agent, earlier.user_id == user, earlier.status == PENDING)
        .scalar_subquery()
    )


def _heads(*, of_messages: bool) -> Select[Job]:
    """Heads of users' queues, unclaimed (or their claim run out): of the given messages
    (``ids``), or due."""
    now = bindparam("now", type_=UTCDateTime())
    ready = Job.memory_id.in_(bindparam("ids", expanding=True)) if of_messages else None
    return (
        select(Job)
        .where(
            Job.status == PENDING,
            or_(Job.claimed_until.is_(None), Job.claimed_until < now),
            Job.id == _head_of(Job.agent_id, Job.user_id),
            ready if ready is not None else Job.next_attempt_at <= now,
        )
        .order_by(Job.id)
        .limit(bindparam("users", type_=Integer()))
        .with_for_update(skip_locked=not of_messages)
    )


# Built once, like a turn's statements below: a claim runs at the start of every
# learning round.
_HEADS_OF = _heads(of_messages=True)
_DUE_HEADS = _heads(of_messages=False)
_BEHIND = (
    select(Job)
    .where(
        Job.agent_id == bindparam("agent"),
        Job.user_id == bindparam("user"),
        Job.status == PENDING,
        Job.id > bindparam("head"),
    )
    .order_by(Job.id)
    .limit(bindparam("run", type_=Integer()))
    .with_for_update()
)


_ENQUEUE = Statement(
    insert(Job)
    .inline()  # no RETURNING: nothing reads the id
    .values(
        {
            Job.memory_id: bindparam("memory_id"),
            Job.agent_id: bindparam("agent_id"),
            Job.user_id: bindparam("user_id"),
            Job.agent_name: bindparam("agent_name"),
            Job.status: PENDING,
            Job.attempts: 0,
            Job.next_attempt_at: bindparam("due"),
            Job.created_at: bindparam("at"),
            Job.updated_at: bindparam("at"),
            Job.traceparent: bindparam("traceparent"),
        }
    )
)


def enqueue_statement(said: Memory, agent_name: str, *, due: datetime) -> Bound:
    """The statement queueing learning from ``said`` (a user message, stored in the same
    transaction), to be tried from ``due`` on."""
    return _ENQUEUE.bind(
        memory_id=said.id,
        agent_id=said.agent_id,
        user_id=said.user_id,
        agent_name=agent_name,
        due=due,
        at=said.created_at,
        traceparent=current_traceparent(),  # the learning job's span links to this turn
    )


def _reply_came() -> Statement:
    """A turn's end makes its job due at the beat after the user's idle time (see
    liz.learning_queue.beats), and the head of the user's queue too: a run is claimed
    only when its head is due, so the burst is learned together once the conversation
    goes quiet. With a batch waiting, every job whose turn is over is due now. A job
    still waiting for its reply keeps its own time; one being retried keeps its backoff.
    (Only the head: each turn rewrites two rows, not the whole burst.)"""
    now = bindparam("now", type_=UTCDateTime())
    agent, user = bindparam("agent_id", type_=Text()), bindparam("user_id", type_=Text())
    said = bindparam("memory_id", type_=Text())
    waiting = aliased(Job, name="waiting")
    batch_waiting = select(func.count()).where(
        waiting.agent_id == agent, waiting.user_id == user, waiting.status == PENDING
    ).scalar_subquery() >= bindparam("batch", type_=Integer())
    rows = aliased(Job, name="due")
    due = (
        select(rows.id)
        .where(
            rows.agent_id == agent,
            rows.user_id == user,
            rows.status == PENDING,
            or_(
                rows.memory_id == said,
                and_(
                    rows.attempts == 0,
                    rows.reply_memory_id.is_not(None),
                    or_(rows.id == _head_of(agent, user), batch_waiting),
                ),
            ),
        )
        # PostgreSQL locks the rows in id order, as every transaction takes LearningJob
        # rows (liz.db.conflicts): an UPDATE alone takes them in the order it finds them,
        # and a claim holding the head while it waits for the job behind would deadlock
        # against it. SQLite's writers take turns, and it has no FOR UPDATE.
        .order_by(rows.id)
        .with_for_update()
    )
    return Statement(
        update(Job)
        .where(Job.id.in_(due))
        .values(
            {
                Job.updated_at: now,
                Job.next_attempt_at: case(
                    (Job.attempts > 0, Job.next_attempt_at),
                    (batch_waiting, now),
                    else_=bindparam("later", type_=UTCDateTime()),
                ),
                Job.reply_memory_id: case(
                    (
                        Job.memory_id == said,
                        func.coalesce(bindparam("reply_id", type_=Text()), Job.reply_memory_id),
                    ),
                    else_=Job.reply_memory_id,
                ),
            }
        )
    )


_REPLY_CAME = _reply_came()


def reply_came_statement(
    said: Memory, reply_id: str | None, now: datetime, *, idle_seconds: float, batch: int
) -> Bound:
    """The statement saying the turn of ``said`` is over (``reply_id`` is the stored
    reply, or None when it failed): its job and the head of the user's queue are due at
    the first beat once the user has been quiet ``idle_seconds``; every job whose turn is
    over is due now when ``batch`` are waiting."""
    return _REPLY_CAME.bind(
        agent_id=said.agent_id,
        user_id=said.user_id,
        memory_id=said.id,
        reply_id=reply_id,
        now=now,
        later=learn_at(now, idle_seconds),
        batch=batch,
    )


async def claim_runs(
    session: AsyncSession,
    *,
    owner: str,
    now: datetime,
    until: datetime,
    users: int = 1,
    run: int = 1,
    memory_ids: Sequence[str] | None = None,
) -> list[list[Job]]:
    """Claim, for up to ``users`` users, the head of the user's queue and the jobs right
    behind it, up to ``run`` jobs in all, to be learned together in ``id`` order.

    A run stops at the first job that is claimed by another worker or not ready: not
    due (its reply may still come, or it waits out a retry's backoff), or, with
    ``memory_ids``, not one of those messages (the caller holds their exchanges; due or
    not, they are ready). Heads oldest first; returns the claimed rows, run by run.
    """
    # PostgreSQL: rows another worker is claiming are skipped, not waited for; given
    # messages' jobs are waited for (the turn that queued one may be storing the reply).
    # SQLite ignores both: its writers take turns (BEGIN IMMEDIATE).
    if memory_ids is not None:
        query, values = _HEADS_OF, {"now": now, "users": users, "ids": list(memory_ids)}
    else:
        query, values = _DUE_HEADS, {"now": now, "users": users}
    heads = list(await session.scalars(query, values))
    wanted = set(memory_ids) if memory_ids is not None else None
    runs = []
    for head in heads:
        claimed = [head]
        if run > 1 and (wanted is None or len(wanted) > 1):
            # Only a head's claimer reads behind it, and no other worker can claim
            # these (they are not heads), so waiting for their locks is brief.
            behind = await session.scalars(
                _BEHIND,
                {"agent": head.agent_id, "user": head.user_id, "head": head.id, "run": run - 1},
            )
            for job in behind:
                ready = (
                    job.memory_id in wanted if wanted is not None else job.next_attempt_at <= now
                )
                free = job.claimed_until is None or job.claimed_until < now
                if not (ready and free):
                    break
                claimed.append(job)
        for job in claimed:
            job.claimed_by = owner
            job.claimed_until = until
            job.updated_at = now
        runs.append(claimed)
    await session.flush()
    return runs


async def renew_all(
    session: AsyncSession, job_ids: Sequence[int], owner: str, until: datetime
) -> bool:
    """Extend this worker's claim on every one of ``job_ids``; False when one is done or
    another worker has it (the others are extended all the same)."""
    result = await session.execute(
        update(Job)
        .where(Job.id.in_(list(job_ids)), Job.status == PENDING, Job.claimed_by == owner)
        .values(claimed_until=until)
    )
    return _rowcount(result) == len(set(job_ids))


def finish_statement(job_ids: Sequence[int]) -> Delete:
    """The delete that removes learned jobs; it finds fewer rows than ``job_ids`` when
    one was gone already (another worker learned it). On PostgreSQL it locks them in
    ``id`` order first, the order every transaction takes them in (liz.db.conflicts)."""
    ordered = (
        select(Job.id)
        .where(Job.id.in_(list(job_ids)), Job.status == PENDING)
        .order_by(Job.id)
        .with_for_update()
    )
    return delete(Job).where(Job.id.in_(ordered), Job.status == PENDING)


async def finish_all(session: AsyncSession, job_ids: Sequence[int]) -> bool:
    """Remove learned jobs; False when one of them was gone already (another worker
    learned it: the caller rolls its transaction back)."""
    result = await session.execute(finish_statement(job_ids))
    return _rowcount(result) == len(set(job_ids))


async def retry_later(
    session: AsyncSession,
    job_id: int,
    owner: str,
    *,
    tries: int,
    error: str,
    due: datetime,
    now: datetime,
) -> None:
    """Give the claim back after ``tries`` failed tries; try again from ``due``."""
    await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == PENDING, Job.claimed_by == owner)
        .values(
            attempts=Job.attempts + tries,
            next_attempt_at=due,
            last_error=error[:MAX_ERROR_CHARS],
            claimed_by=None,
            claimed_until=None,
            updated_at=now,
        )
    )


async def give_up(
    session: AsyncSession, job_id: int, owner: str, *, tries: int, reason: str, now: datetime
) -> None:
    """Mark a job failed for good, with the reason; the user's later jobs go on."""
    await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == PENDING, Job.claimed_by == owner)
        .values(
            status=FAILED,
            attempts=Job.attempts + tries,
            last_error=reason[:MAX_ERROR_CHARS],
            claimed_by=None,
            claimed_until=None,
            updated_at=now,
        )
    )


async def claim_owners(session: AsyncSession, prefix: str) -> list[str]:
    """The workers (owners starting with ``prefix``) holding claims on pending jobs."""
    rows = await session.scalars(
        select(Job.claimed_by)
        .where(Job.status == PENDING, Job.claimed_by.startswith(prefix, autoescape=True))
        .distinct()
    )
    return [owner for owner in rows if owner is not None]


async def release_owners(session: AsyncSession, owners: Sequence[str], now: datetime) -> int:
    """Give back every claim of ``owners`` (processes that are gone): due now."""
    if not owners:
        return 0
    result = await session.execute(
        update(Job)
        .where(Job.status == PENDING, Job.claimed_by.in_(list(owners)))
        .values(claimed_by=None, claimed_until=None, updated_at=now)
    )
    return _rowcount(result)


async def release(
    session: AsyncSession, job_id: int, owner: str, now: datetime, due: datetime | None = None
) -> None:
    """Give the claim back untried (shutting down): any worker may take it at once, or
    from ``due`` on (a budget spent for today)."""
    later = {} if due is None else {"next_attempt_at": due}
    await session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == PENDING, Job.claimed_by == owner)
        .values(claimed_by=None, claimed_until=None, updated_at=now, **later)
    )


async def exchanges_of(
    session: AsyncSession, queued: Sequence[Job]
) -> list[list[dict[str, str]] | None]:
    """For each job, the user's message and, when stored, the reply, as chat messages;
    None when the message is no longer in the Memory table. One query."""
    ids = [job.memory_id for job in queued]
    ids += [job.reply_memory_id for job in queued if job.reply_memory_id]
    rows = {
        row.id: row
        for row in await session.scalars(select(MemoryRecord).where(MemoryRecord.id.in_(ids)))
    }
    found: list[list[dict[str, str]] | None] = []
    for job in queued:
        said = rows.get(job.memory_id)
        if said is None:
            found.append(None)
            continue
        messages = [{"role": "user", "content": _text(said.content)}]
        reply = rows.get(job.reply_memory_id or "")
        if reply is not None and _text(reply.content):
            messages.append({"role": "assistant", "content": _text(reply.content)})
        found.append(messages)
    return found


def _text(content: str) -> str:
    try:
        parsed = json.loads(content)
    except (TypeError, ValueError):
        return ""
    text = parsed.get("text") if isinstance(parsed, dict) else None
    return text if isinstance(text, str) else ""


async def backlog(session: AsyncSession, scope: tuple[str, str] | None = None) -> Backlog:
    """The queue's jobs by status, of every user or of one (agent id, user id)."""
    query = select(Job.status, func.count(), func.min(Job.created_at)).group_by(Job.status)
    if scope is not None:
        query = query.where(Job.agent_id == scope[0], Job.user_id == scope[1])
    rows = await session.execute(query)
    counts: dict[str, tuple[int, datetime | None]] = {
        status: (int(count), oldest) for status, count, oldest in rows
    }
    pending, oldest = counts.get(PENDING, (0, None))
    return Backlog(
        pending=pending, failed=counts.get(FAILED, (0, None))[0], oldest_pending_at=oldest
    )


async def list_jobs(
    session: AsyncSession, *, status: str | None = None, limit: int = 100
) -> list[Job]:
    """Jobs oldest first, all or of one status (``pending`` or ``failed``)."""
    query = select(Job).order_by(Job.id).limit(limit)
    if status is not None:
        query = query.where(Job.status == status)
    return list(await session.scalars(query))


async def retry_now(session: AsyncSession, now: datetime, ids: Sequence[int] = ()) -> int:
    """Make jobs (those ``ids``, or all) due now: failed ones are queued again with a
    fresh count of tries, pending ones skip the rest of their backoff. Returns how many.

    An id not in the queue is an ``InputError`` naming it, and nothing is changed."""
    if ids:
        found = set(await session.scalars(select(Job.id).where(Job.id.in_(list(ids)))))
        missing = sorted(set(ids) - found)
        if missing:
            named = "; ".join(f"job {job_id} is not in the queue" for job_id in missing)
            raise InputError(
                f"{named} (learned already or discarded? the ids are in `liz facts queue`); "
                "nothing was changed"
            )
    changed = 0
    for status, values in (  # pending first: the failed ones become pending
        (PENDING, {}),
        (FAILED, {"status": PENDING, "attempts": 0}),
    ):
        query = update(Job).where(Job.status == status)
        if ids:
            query = query.where(Job.id.in_(list(ids)))
        # Due since it was queued: due now for every worker, whatever its clock says.
        due = {"next_attempt_at": Job.created_at, "updated_at": now}
        result = await session.execute(query.values(**due, **values))
        changed += _rowcount(result)
    return changed


def lease_end(now: datetime, seconds: float) -> datetime:
    return now + timedelta(seconds=seconds)


def _rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)
