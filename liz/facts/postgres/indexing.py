"""Putting new facts' vectors into PostgreSQL's HNSW graph after the write, not in it.

A small write marks the facts it adds or re-embeds ``"vectorPending"``, which the
HNSW indexes leave out, and this module clears the mark afterwards, a batch per
transaction, in a task of its own: clearing it inserts the vector into the graph.
Searches compare a scope's pending facts exactly meanwhile, so none is unfindable.
One step runs at a time in the whole database (an advisory lock); a step that
fails leaves its facts pending, and the next step, any process's, takes them.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.types import Clock, SystemClock

logger = logging.getLogger(__name__)

# Facts per transaction: its rows stay locked until it commits, a write of one waiting.
BATCH = 10
FINISH_SECONDS = 10.0  # at most this long indexing before the process ends
# The advisory lock of one indexing step; scope locks are hashes (liz.facts.postgres).
INDEXING_LOCK = 0x6C697A5F696478  # "liz_idx"

# The lock is tried for each row the subquery would take (a volatile function is never
# hoisted out of the scan), so while another step holds it no row qualifies.
_CLEAR = text(
    'UPDATE "Fact" SET "vectorPending" = false WHERE id IN (SELECT id FROM "Fact" '
    f'WHERE "vectorPending" AND pg_try_advisory_xact_lock({INDEXING_LOCK}) '
    "LIMIT :batch FOR UPDATE SKIP LOCKED) RETURNING id"
)


async def index_pending(engine: AsyncEngine, *, batch: int = BATCH) -> int:
    """Move up to ``batch`` pending facts into the HNSW graph, in one transaction;
    return how many moved (none while another step holds the indexing lock)."""
    async with engine.connect() as connection:
        # One statement, its own transaction: no BEGIN or COMMIT round trip around it.
        await connection.execution_options(isolation_level="AUTOCOMMIT")
        try:
            return len((await connection.execute(_CLEAR, {"batch": batch})).all())
        except asyncio.CancelledError:
            # Cancelled mid-statement (as tasks are when their event loop ends): the
            # connection is dropped, which rolls the statement back on the server.
            await connection.invalidate()
            raise


class BackgroundIndexing:
    """One task per process that runs :func:`index_pending` until nothing is pending.

    :meth:`wake` after a write that left facts pending (or a search that saw some);
    the task starts at once and takes batch after batch, off the write's own time.
    :meth:`wait` sees the task through; :meth:`finish` bounds that by the clock.
    """

    def __init__(
        self, engine: AsyncEngine, *, batch: int = BATCH, clock: Clock | None = None
    ) -> None:
        self._engine = engine
        self._batch = batch
        self._clock = clock or SystemClock()
        self._task: asyncio.Task[None] | None = None
        self._again = False

    def wake(self) -> None:
        """Start the task, or tell the running one to look again when it is done."""
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._again = False
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def wait(self) -> None:
        """Until the running task (if any) has finished."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def finish(self, timeout: float = FINISH_SECONDS) -> None:
        """Before the process ends: the running task's steps, for at most ``timeout``
        seconds; what is still pending stays found, and the next step takes it."""
        task = self._task
        if task is None or task.done():
            return
        timer = asyncio.ensure_future(self._clock.sleep(timeout))
        try:
            await asyncio.wait([task, timer], return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
        if not task.done():
            logger.warning("indexing pending fact vectors took over %.0f s; stopped", timeout)
            task.cancel()
            await asyncio.wait([task])

    async def _run(self) -> None:
        try:
            while True:
                self._again = False
                # A full batch says more wait: take them now, so writes that never
                # pause cannot outpace the steps.
                while await index_pending(self._engine, batch=self._batch) == self._batch:
                    pass
                if not self._again:
                    return
        except Exception:
            # No caller to raise to: the facts stay pending and searchable, and the
            # next write or search starts another step.
            logger.exception("indexing pending fact vectors failed; they stay pending")
