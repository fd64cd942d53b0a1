"""The turns under way in this process, so background work can wait for a lull.

Learning facts costs more CPU than the turn it learns from (two LLM answers to read,
embeddings, a commit). Run beside a burst of turns, it slows their replies; run in
the lull after the burst, it costs them nothing. :meth:`TurnsUnderWay.lull` is that
wait, bounded so that under unbroken load the work still gets done.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator


class TurnsUnderWay:
    """Counts the turns this process is taking (``runtime.turns``)."""

    def __init__(self) -> None:
        self.count = 0
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

    async def lull(self, quiet: float, until: float) -> None:
        """Return once no turn has been under way for ``quiet`` seconds, or when the
        event loop's clock reaches ``until``, whichever comes first."""
        loop = asyncio.get_running_loop()
        while (left := until - loop.time()) > 0:
            if self.count:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._none.wait(), left)
                continue
            started = self._started
            await asyncio.sleep(min(quiet, left))
            if self._started == started:
                return
