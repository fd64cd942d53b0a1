"""The beat: the instants at which bursts gone quiet are learned, the same for every user.

A burst is learned at the first beat at or after the moment it has been quiet
``learn_after_idle``; beats fall every half of that, counted from the Unix epoch, so
every user's burst due in the same window is learned at the same instant, in every
process, and their candidate facts share one embeddings request
(liz.facts.shared_embedding). A fact is thus learned between ``learn_after_idle`` and
1.5 times that after the user's last message. With 0 there is no beat: at once.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from liz.facts.shared_embedding import Seat, SharedEmbedding

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TICK = timedelta(microseconds=1)


def learn_at(newest: datetime, idle_seconds: float) -> datetime:
    """When a burst whose newest message came at ``newest`` is learned: the first beat at
    or after it has been quiet ``idle_seconds`` (then, with 0)."""
    quiet = newest + timedelta(seconds=idle_seconds)
    if idle_seconds <= 0:
        return quiet
    # In whole microseconds: every burst due in one window gets the very same instant.
    period = max(1, round(idle_seconds * 500_000))
    ticks = (quiet - _EPOCH) // _TICK
    return _EPOCH + _TICK * (-(-ticks // period) * period)


class Beats:
    """The beats ahead in this process, each with its bursts' shared embeddings request."""

    def __init__(self) -> None:
        self._shared: dict[datetime, SharedEmbedding] = {}

    def seat(self, at: datetime) -> Seat:
        """A seat in the request of the bursts learned at the beat ``at``."""
        # Beats whose request went out, or whose bursts all moved on, are forgotten.
        self._shared = {beat: shared for beat, shared in self._shared.items() if not shared.closed}
        shared = self._shared.get(at)
        if shared is None:
            shared = self._shared[at] = SharedEmbedding()
        return shared.seat()
