"""The turns under way in this process, so background work can wait for a lull.

Learning facts costs more CPU than the turn it learns from (two LLM answers to read,
embeddings, a commit). Run beside a burst of turns, it slows their replies; run in
the lull after the burst, it costs them nothing. :meth:`TurnsUnderWay.lull` is that
wait, bounded so that under unbroken load the work still gets done.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Iterator
from datetime import datetime

from liz.types import Clock, SystemClock


class TurnsUnderWay:
    """Counts the turns this process is taking (``runtime.turns``); waits on ``clock``."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.count = 0
        self._clock = clock or SystemClock()
        self._started = 0
        self._none = asyncio.Event()
        self._none.set()

    @contextlib.contextmanager
    def one(self) -> Iterator[None]:
        """Count a turn while the block runs."""
        self.count += 1
        self._started += 1
        self._none.clear()
        try:
            yield
        finally:
            self.count -= 1
            if self.count == 0:
                self._none.set()

    async def lull(self, quiet: float, until: datetime) -> None:
        """Return once no turn has been under way for ``quiet`` seconds, or when the
        clock reaches ``until``, whichever comes first."""
        while (left := (until - self._clock.now()).total_seconds()) > 0:
            if self.count:
                await self._turns_end_within(left)
                continue
            started = self._started
            await self._clock.sleep(min(quiet, left))
            if self._started == started:
                return

    async def _turns_end_within(self, seconds: float) -> None:
        await first_done(self._none.wait(), self._clock.sleep(seconds))


async def first_done(*waits: Awaitable[object]) -> None:
    """Wait until one of ``waits`` is done; cancel the others."""
    started = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(started, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in started:
            waiting.cancel()
        await asyncio.gather(*started, return_exceptions=True)
