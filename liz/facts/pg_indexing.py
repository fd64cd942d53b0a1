"""Putting new facts' vectors into PostgreSQL's HNSW graph after the write, not in it.

Inserting a vector into an HNSW graph costs 2.5 to 4.5 ms, most of a small write's
time. So a small write (liz.facts.pg_commit) marks the facts it adds or re-embeds
``"vectorPending"``, which the HNSW indexes leave out (their predicate says ``NOT
"vectorPending"``), and this module clears the mark afterwards, a batch at a time, in
a task of its own: clearing it is what inserts the vector into the graph.

Nothing is ever unfindable meanwhile: a search through the graph also compares the
scope's pending facts exactly (a partial index finds them; there are few). Clearing
is one transaction per batch, so a step that fails or is cut short leaves its facts
pending, still found, and the next step takes them. Any process's step takes every
pending fact, its own or another process's; one step runs at a time in the whole
database (an advisory lock), and a step that finds another running leaves the work
to it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

logger = logging.getLogger(__name__)

# Facts per transaction: its rows stay locked until it commits, an update of one of
# them waiting. At 10k facts of 1536 dimensions, batches of 50 held theirs up to 306
# ms and batches of 10 up to 84, for a tenth fewer facts indexed a second (211 to
# 231 against 234 to 263); at 100k, 50 held theirs about 700 ms.
BATCH = 10
QUIET_SECONDS = 0.05  # no write for this long: index now
AT_MOST_SECONDS = 1.0  # however busy the writes, index this long after the first
FINISH_SECONDS = 10.0  # at most this long indexing before the process ends
# The advisory lock one indexing step holds; a fixed number no other lock of liz's uses
# (scope locks are hashes, liz.facts.snapshot.scope_lock_key).
INDEXING_LOCK = 0x6C697A5F696478  # "liz_idx"

# One statement, one round trip, its own transaction. The lock is tried for each row
# the subquery would take (a volatile function is never hoisted out of the scan), so
# while another step holds it no row qualifies.
_CLEAR = (
    'UPDATE "Fact" SET "vectorPending" = false WHERE id IN (SELECT id FROM "Fact" '
    f'WHERE "vectorPending" AND pg_try_advisory_xact_lock({INDEXING_LOCK}) '
    "LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING id"
)


async def index_pending(engine: AsyncEngine, *, batch: int = BATCH) -> int:
    """Move up to ``batch`` pending facts into the HNSW graph, in one transaction;
    return how many moved (none while another step holds the indexing lock).

    Database errors are raised as SQLAlchemy's ``DBAPIError``.
    """
    import asyncpg  # here: installs without PostgreSQL support lack it

    raw = await engine.raw_connection()
    connection: Any = raw.driver_connection
    try:
        return len(await connection.fetch(_CLEAR, batch))
    except asyncio.CancelledError:
        # Cancelled mid-statement, as the tasks still running when an event loop ends
        # are: asyncpg would send the server a cancel request from a task of its own,
        # which the closing loop never runs. Dropping the connection instead ends the
        # transaction as surely (the server rolls it back) and drops that request.
        connection.terminate()
        await asyncio.sleep(0)  # the dropped request's task ends here
        await greenlet_spawn(raw.invalidate)
        raise
    except asyncpg.PostgresError as exc:
        raise DBAPIError.instance(None, None, exc, Exception) from exc
    finally:
        await greenlet_spawn(raw.close)


class BackgroundIndexing:
    """One task per process that runs :func:`index_pending` until nothing is pending.

    :meth:`wake` after a write that left facts pending (or a search that saw some);
    :meth:`wait` lets a caller (a test, a shutdown) see the task through.

    The task starts its steps once the process has gone ``quiet`` seconds without a
    wake, or ``at_most`` seconds after the first: a graph insert takes a core for
    milliseconds, which on a small machine would otherwise slow the very next write
    of a burst; a steady stream of writes still has every pending fact indexed
    each ``at_most`` seconds, a batch per transaction.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        batch: int = BATCH,
        quiet: float = QUIET_SECONDS,
        at_most: float = AT_MOST_SECONDS,
    ) -> None:
        self._engine = engine
        self._batch = batch
        self._quiet = quiet
        self._at_most = at_most
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self._last_wake = 0.0
        self._finishing = False

    def wake(self) -> None:
        """Start the task, or tell the running one to look again when it is done."""
        loop = asyncio.get_running_loop()
        self._last_wake = loop.time()
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._again = False
        self._task = loop.create_task(self._run())

    async def wait(self) -> None:
        """Until the running task (if any) has finished."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def finish(self, timeout: float = FINISH_SECONDS) -> None:
        """Before the process ends: the running task's steps now, not after the next
        quiet spell, for at most ``timeout`` seconds. A one-off command's writes would
        otherwise stay pending until another process wrote or searched; what is still
        pending after the timeout stays found, and the next step, any process's, takes it.
        """
        self._finishing = True
        task = self._task
        if task is None or task.done():
            return
        done, _ = await asyncio.wait([task], timeout=timeout)
        if not done:
            logger.warning("indexing pending fact vectors took over %.0f s; stopped", timeout)
            task.cancel()
            await asyncio.wait([task])

    async def _until_quiet(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._at_most
        while (
            not self._finishing
            and (now := loop.time()) < deadline
            and now - self._last_wake < self._quiet
        ):
            await asyncio.sleep(min(deadline, self._last_wake + self._quiet) - now)

    async def _run(self) -> None:
        try:
            while True:
                await self._until_quiet()
                self._again = False
                # A full batch says more wait: take them now. Waiting for the next
                # quiet spell between batches let writes that never pause outpace the
                # steps (a batch a second), and the pending facts, compared exactly
                # by every search, piled up.
                while await index_pending(self._engine, batch=self._batch) == self._batch:
                    pass
                if not self._again:
                    return
        except Exception:
            # A background task has no caller to raise to. The facts stay pending and
            # searchable; the next write or search starts another step.
            logger.exception("indexing pending fact vectors failed; they stay pending")
