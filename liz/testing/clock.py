"""A clock that tests move by hand: virtual time for everything that reads or waits.

liz reads the time and sleeps only through a :class:`liz.types.Clock`, so a test
can run hours of scheduled posting, or date facts, without waiting: it advances
a :class:`ManualClock`, which wakes each sleeping task in time order and lets it
run until it sleeps again.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta


@dataclass(order=True)
class _Sleeper:
    wake_at: datetime
    order: int
    future: asyncio.Future[None] = field(compare=False)
    task: asyncio.Task[object] | None = field(compare=False, default=None)


class ManualClock:
    """Virtual time: ``sleep`` waits until a test calls :meth:`advance` past its end.

    >>> import asyncio
    >>> clock = ManualClock()
    >>> async def main() -> None:
    ...     woken = asyncio.create_task(clock.sleep(3600))  # e.g. a bot's loop
    ...     await clock.wait_for_sleepers(1)                # it is idle
    ...     await clock.advance(hours=4)  # every wake-up in those 4 hours happens, in order
    ...     await woken
    >>> asyncio.run(main())
    >>> clock.now().isoformat()
    '2025-01-01T16:00:00+00:00'
    """

    def __init__(self, start: datetime | None = None, *, timeout: float = 30.0) -> None:
        self._now = start or datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
        self._sleepers: list[_Sleeper] = []
        self._order = itertools.count()
        self._waiters: list[asyncio.Future[None]] = []
        # A real-time bound on waiting for tasks to fall asleep, so a test that
        # expects more sleepers than exist fails with a message instead of hanging.
        self.timeout = timeout

    def now(self) -> datetime:
        return self._now

    @property
    def sleeping(self) -> int:
        """How many tasks are asleep on this clock right now."""
        return len(self._sleepers)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        sleeper = _Sleeper(
            self._now + timedelta(seconds=seconds),
            next(self._order),
            asyncio.get_running_loop().create_future(),
            asyncio.current_task(),
        )
        self._sleepers.append(sleeper)
        self._changed()
        try:
            await sleeper.future
        finally:
            if sleeper in self._sleepers:
                self._sleepers.remove(sleeper)
                self._changed()

    async def wait_for_sleepers(self, count: int) -> None:
        """Wait (in real time, up to ``timeout``) until ``count`` tasks are asleep here."""
        await self._wait_until(lambda: len(self._sleepers) >= count, count)

    async def advance(
        self, seconds: float = 0, *, minutes: float = 0, hours: float = 0
    ) -> datetime:
        """Move time forward, waking sleepers one at a time in the order they are due;
        returns the new time.

        Before each wake-up it waits until as many tasks sleep as did when it was
        called, so each woken task finishes its work before time moves on; a woken
        task that ends instead of sleeping again is one fewer to wait for.
        """
        expected = len(self._sleepers)
        target = self._now + timedelta(seconds=seconds, minutes=minutes, hours=hours)
        while True:
            await self.wait_for_sleepers(expected)
            due = [s for s in self._sleepers if s.wake_at <= target]
            if not due:
                break
            first = min(due)
            self._now = max(self._now, first.wake_at)
            self._sleepers.remove(first)
            first.future.set_result(None)
            expected = await self._after_waking(first.task, expected)
        await self.wait_for_sleepers(expected)
        self._now = max(self._now, target)
        return self._now

    async def _after_waking(self, task: asyncio.Task[object] | None, expected: int) -> int:
        """Wait until ``expected`` tasks sleep again, or ``task`` (just woken) has ended
        with one fewer asleep; returns how many to expect from now on."""
        if task is None:
            return expected
        task.add_done_callback(lambda _: self._changed())

        def asleep() -> int:
            return len(self._sleepers)

        await self._wait_until(
            lambda: asleep() >= expected or (task.done() and asleep() >= expected - 1), expected
        )
        return expected if asleep() >= expected else expected - 1

    async def _wait_until(self, ready: Callable[[], bool], expected: int) -> None:
        """Wait for ``ready()``, checked each time a task falls asleep or wakes."""
        try:
            async with asyncio.timeout(self.timeout):
                while not ready():
                    waiter = asyncio.get_running_loop().create_future()
                    self._waiters.append(waiter)
                    await waiter
        except TimeoutError:
            raise TimeoutError(
                f"expected {expected} tasks asleep on the clock, but {len(self._sleepers)} are"
            ) from None

    def _changed(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
