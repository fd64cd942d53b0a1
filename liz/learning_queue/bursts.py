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
from collections.abc import Awaitable, Callable
from datetime import datetime

from liz.facts.shared_embedding import Seat
from liz.learning_queue.beats import Beats, learn_at
from liz.learning_queue.settings import LearningSettings
from liz.learning_queue.work import Said
from liz.runtime.turns_under_way import first_done
from liz.types import Clock

# Learns some of a burst's messages, with its seat in a beat's shared request (or none).
LearnRound = Callable[[list[Said], Seat | None], Awaitable[None]]


class Burst:
    """One user's messages waiting here to be learned together, oldest first.

    ``now`` is set when the process stops: what is gathered is then learned at once.
    """

    def __init__(
        self, clock: Clock, beats: Beats, settings: LearningSettings, now: asyncio.Event
    ) -> None:
        self.said: collections.deque[Said] = collections.deque()
        self._grown = asyncio.Event()
        self._clock, self._beats, self._now = clock, beats, now
        self._idle, self._batch = settings.learn_after_idle, settings.batch_size

    def add(self, said: Said) -> None:
        self.said.append(said)
        self._grown.set()

    async def learn(self, learn_round: LearnRound) -> None:
        """Learn the burst with ``learn_round``, at most a batch a round, until no message
        is left; a round's seat is left however the round ended."""
        while self.said:
            seat = await self._gathered()
            taken = [self.said.popleft() for _ in range(min(len(self.said), self._batch))]
            try:
                await learn_round(taken, seat)
            finally:
                if seat is not None:
                    seat.leave()

    async def _gathered(self) -> Seat | None:
        """Return once the first beat after the newest message is ``idle`` old has come
        (with the burst's seat in that beat's shared embeddings request; none with 0), a
        batch waits, or the process stops; the last two go alone."""
        seat: Seat | None = None
        beat: datetime | None = None
        try:
            while len(self.said) < self._batch and not self._now.is_set():
                due = learn_at(self.said[-1].at, self._idle)
                if self._idle > 0 and due != beat:  # a new message moved it on
                    if seat is not None:
                        seat.leave()
                    beat, seat = due, self._beats.seat(due)
                left = (due - self._clock.now()).total_seconds()
                if left <= 0:
                    taken, seat = seat, None
                    return taken
                self._grown.clear()
                await first_done(self._clock.sleep(left), self._grown.wait(), self._now.wait())
            return None
        finally:
            if seat is not None:  # it goes alone, or not at all: nobody waits for it
                seat.leave()
