"""A user's messages said to this process, gathered until the conversation goes quiet.

Learning a burst of a user's messages at once costs one extraction call, one embedding
request and at most one reconcile call, where learning each message costs them all
again. Nothing is gained by learning sooner: the recent conversation is in the prompt
anyway, so a fact matters from the user's next conversation on. A burst gone quiet
waits for the next beat (liz.learning_queue.beats), where the bursts of other users due
in the same window share its embeddings request. The jobs stay in the queue meanwhile
(a crash loses nothing), due at the same time for every process.
"""

from __future__ import annotations

import asyncio
import collections
from datetime import datetime

from liz.facts.shared_embedding import Seat
from liz.learning_queue.beats import Beats, learn_at
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
        self,
        clock: Clock,
        beats: Beats,
        *,
        idle_seconds: float,
        batch: int,
        now: asyncio.Event,
    ) -> Seat | None:
        """Return once the first beat after the newest message is ``idle_seconds`` old
        has come (with the burst's seat in that beat's shared embeddings request; none
        with 0), ``batch`` messages wait, or ``now`` is set (the process stops: what is
        gathered is learned); the last two go alone."""
        seat: Seat | None = None
        beat: datetime | None = None
        try:
            while len(self.said) < batch and not now.is_set():
                due = learn_at(self.said[-1].at, idle_seconds)
                if idle_seconds > 0 and due != beat:  # a new message moved it on
                    if seat is not None:
                        seat.leave()
                    beat, seat = due, beats.seat(due)
                left = (due - clock.now()).total_seconds()
                if left <= 0:
                    taken, seat = seat, None
                    return taken
                self._grown.clear()
                await first_done(clock.sleep(left), self._grown.wait(), now.wait())
            return None
        finally:
            if seat is not None:  # it goes alone, or not at all: nobody waits for it
                seat.leave()
