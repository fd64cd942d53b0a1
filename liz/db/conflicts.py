"""Transactions that collide: the order every transaction takes its rows in, and the
bounded retry of what PostgreSQL still refuses.

Lock order
----------
Two transactions deadlock only when each holds a row the other wants next. Every
transaction liz runs takes its rows in this order, skipping what it does not touch:

1. a user's facts (the scope's advisory lock, then its ``Fact`` and ``FactHistory``
   rows): learning's transaction, and the facts endpoints';
2. ``ToolApproval`` rows: a decided approval, then the approval its turn pauses on;
3. ``Memory`` rows (only inserted, never waited for);
4. ``LearningJob`` rows, in ``id`` order: a turn's queueing and its reply (its own job
   and the head of the user's queue), a claim (heads, then the jobs behind them),
   learning's delete of the jobs it learned, the outcome of a try;
5. ``Usage`` rows: the turn's reply, a decided approval, learning's commit;
6. ``IdempotencyKey`` rows, each in a transaction of its own.

So the reply's transaction (``Memory``, ``LearningJob``, ``Usage``), a learning
job's (facts, ``LearningJob``, ``Usage``) and a decided approval's (``ToolApproval``,
``Memory``, ``Usage``) never wait for each other in a circle. Statements committed
together as one PostgreSQL statement (liz.db.driver) run in the order given, and
``LearningJob`` rows are locked by ``id`` even where a statement names several.

The retry
---------
A deadlock (SQLSTATE ``40P01``) or serialization failure (``40001``) that happens all
the same, from an order this list misses or a user's own middleware, rolls its
transaction back and nothing else: :func:`retry_conflicts` runs the whole unit of work
again, up to :data:`ATTEMPTS` times, so the request never sees it. SQLite needs no
retry: every writing transaction begins with ``BEGIN IMMEDIATE`` and so holds the only
write lock from its start; a lock still busy after ``busy_timeout`` is an outage (503).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Tries of one unit of work in all; the first conflict is already rare.
ATTEMPTS = 4
# The wait before the n-th retry is up to n times this, at random: the transactions
# that collided start again apart.
RETRY_SPREAD_SECONDS = 0.02
CONFLICT_STATES = frozenset({"40P01", "40001"})  # deadlock detected, serialization failure


def is_conflict(error: BaseException) -> bool:
    """Whether ``error`` (the driver's, or SQLAlchemy's wrapping it) is a deadlock or a
    serialization failure: the transaction was rolled back and may simply run again."""
    for candidate in (error, getattr(error, "orig", None), error.__cause__):
        if getattr(candidate, "sqlstate", None) in CONFLICT_STATES:
            return True
    return False


async def retry_conflicts(unit: Callable[[], Awaitable[T]], *, what: str = "a transaction") -> T:
    """Run ``unit`` (a whole transaction, begun and committed inside it) and run it again
    when PostgreSQL rolled it back for a conflict, up to :data:`ATTEMPTS` tries."""
    attempt = 1
    while True:
        try:
            return await unit()
        except Exception as exc:
            if attempt >= ATTEMPTS or not is_conflict(exc):
                raise
            logger.info("%s collided with another (%s); trying it again", what, exc)
        await asyncio.sleep(random.uniform(0, RETRY_SPREAD_SECONDS * attempt))
        attempt += 1
