"""A user's messages said to this process, gathered until the conversation goes quiet.

Learning a burst of a user's messages at once costs one extraction call, one embedding
request and at most one reconcile call, where learning each message costs them all
again. Nothing is gained by learning sooner: the recent conversation is in the prompt
anyway, so a fact matters from the user's next conversation on. The jobs stay in the
queue meanwhile (a crash loses nothing), due at the same time for every process.
"""

from __future__ import annotations

import asyncio
import collections
from datetime import timedelta

from liz.learning_queue.work import Said
from liz.turns import first_done
from liz.types import Clock


class Burst:
    """One user's messages waiting here to be learned together, oldest first."""

    def __init__(self) -> None:
        self.said: collections.deque[Said] = collections.deque()
        self._grown = asyncio.Event()

    def add(self, said: Said) -> None:
        self.said.append(said)
        self._grown.set()

    def take(self, most: int) -> list[Said]:
        return [self.said.popleft() for _ in range(min(len(self.said), most))]

    async def gathered(
        self, clock: Clock, *, idle_seconds: float, batch: int, now: asyncio.Event
    ) -> None:
        """Return once the newest message is ``idle_seconds`` old, ``batch`` messages
        wait, or ``now`` is set (the process stops: what is gathered is learned)."""
        idle = timedelta(seconds=idle_seconds)
        while len(self.said) < batch and not now.is_set():
            left = (self.said[-1].at + idle - clock.now()).total_seconds()
            if left <= 0:
                return
            self._grown.clear()
            await first_done(clock.sleep(left), self._grown.wait(), now.wait())
