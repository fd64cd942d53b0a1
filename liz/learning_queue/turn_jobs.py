"""The two statements of the learning queue every turn with facts on runs: queueing the
job with the user's message, and making it due when the turn ends. They go straight to
the driver, in the turn's own transactions (liz.db.driver), skipping the session's
overhead.
"""

from __future__ import annotations

from datetime import datetime

from liz.db.driver import Bound, Statement
from liz.learning_queue.beats import learn_at
from liz.learning_queue.tables import PENDING
from liz.observe.learning import current_traceparent
from liz.types import Memory

_ENQUEUE = Statement.of(
    'INSERT INTO "LearningJob" ("memoryId", "agentId", "userId", "agentName", "status", '
    '"attempts", "nextAttemptAt", "createdAt", "updatedAt", "traceparent") '
    "VALUES ({}, {}, {}, {}, {}, 0, {}, {}, {}, {})"
)
# A turn's end makes its job due at the beat after the user's idle time (see
# liz.learning_queue.beats), and the head of the user's queue too: a run is claimed only
# when its head is due, so the burst is learned together once the conversation goes quiet.
# With a batch waiting, every job whose turn is over is due now. A job still waiting for
# its reply keeps its own time; one being retried keeps its backoff. (Only the head: each
# turn rewrites two rows, not the whole burst.)
_WAITING = (
    'SELECT {} FROM "LearningJob" AS "waiting" WHERE "waiting"."agentId" = {} '
    'AND "waiting"."userId" = {} AND "waiting"."status" = {}'
)
_BATCH_WAITING = "(" + _WAITING.format("count(*)", "{}", "{}", "{}") + ") >= {}"
_REPLY_CAME_SET = (
    'UPDATE "LearningJob" SET "updatedAt" = {}, '
    '"nextAttemptAt" = CASE WHEN "attempts" > 0 THEN "nextAttemptAt" '
    f"WHEN {_BATCH_WAITING} THEN {{}} ELSE {{}} END, "
    '"replyMemoryId" = CASE WHEN "memoryId" = {} THEN COALESCE({}, "replyMemoryId") '
    'ELSE "replyMemoryId" END '
)
_REPLY_CAME_ROWS = (
    '"agentId" = {} AND "userId" = {} AND "status" = {} AND ("memoryId" = {} '
    'OR ("attempts" = 0 AND "replyMemoryId" IS NOT NULL AND ('
    '"id" = (' + _WAITING.format('min("waiting"."id")', "{}", "{}", "{}") + ") "
    f"OR {_BATCH_WAITING})))"
)
# PostgreSQL locks the rows in id order, as every transaction takes LearningJob rows
# (liz.db.conflicts): an UPDATE alone takes them in the order it finds them, and a claim
# holding the head while it waits for the job behind would deadlock against it.
# SQLite's writers take turns, and it has no FOR UPDATE.
_REPLY_CAME = Statement(
    sqlite=Statement.of(_REPLY_CAME_SET + "WHERE " + _REPLY_CAME_ROWS).sqlite,
    postgres=Statement.of(
        _REPLY_CAME_SET
        + 'WHERE "id" IN (SELECT "id" FROM "LearningJob" WHERE '
        + _REPLY_CAME_ROWS
        + ' ORDER BY "id" FOR UPDATE)'
    ).postgres,
    named=Statement.of(_REPLY_CAME_SET + "WHERE " + _REPLY_CAME_ROWS).named,
)


def enqueue_statement(said: Memory, agent_name: str, *, due: datetime) -> Bound:
    """The statement queueing learning from ``said`` (a user message, stored in the same
    transaction), to be tried from ``due`` on."""
    at = said.created_at
    trace = current_traceparent()  # the learning job's span links to this turn
    return _ENQUEUE.bind(
        said.id, said.agent_id, said.user_id, agent_name, PENDING, due, at, at, trace
    )


def reply_came_statement(
    said: Memory, reply_id: str | None, now: datetime, *, idle_seconds: float, batch: int
) -> Bound:
    """The statement saying the turn of ``said`` is over (``reply_id`` is the stored
    reply, or None when it failed): its job and the head of the user's queue are due at
    the first beat once the user has been quiet ``idle_seconds``; every job whose turn is
    over is due now when ``batch`` are waiting."""
    later = learn_at(now, idle_seconds)
    agent, user = said.agent_id, said.user_id
    waiting = (agent, user, PENDING)
    return _REPLY_CAME.bind(
        now,
        *waiting,
        batch,
        now,
        later,
        said.id,
        reply_id,
        *waiting,
        said.id,
        *waiting,
        *waiting,
        batch,
    )
