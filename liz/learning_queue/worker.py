"""The worker that learns facts from queued messages, in every liz process.

Three ways a job gets tried, all through one claim, so a job is tried by one
worker at a time and its facts are written once:

- right after the reply (``learn_now``, from the ``extract_facts`` step), with the
  exchange in hand and a few quick retries;
- by this process's poller, every ``poll_seconds`` or when woken, for jobs that
  are due: retried after an outage, a reply that never came, a crash elsewhere;
- by any other process sharing the database (PostgreSQL), the same way.

The job row is deleted in the same transaction as the facts learned from it, and
that delete must find the row: a second worker that learned the same message
(its claim ran out meanwhile) rolls its facts back.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncSession
from tenacity import wait_exponential

from liz.learning_queue import jobs
from liz.learning_queue.jobs import Job
from liz.learning_queue.outcomes import describe, is_outage, next_try, worth_retrying
from liz.learning_queue.settings import LearningSettings
from liz.retry import retrying
from liz.settings_errors import load_settings

if TYPE_CHECKING:
    from liz.facts.store import FactStore
    from liz.runtime import Runtime

logger = logging.getLogger(__name__)
EXTRACT_FACTS_LOGGER = "middleware.extract_facts"


class AlreadyLearned(Exception):
    """Another worker learned this message first; the facts just written are rolled back."""


class LearningWorker:
    """Works the learning queue for one process; ``runtime.learning``."""

    def __init__(self, runtime: Runtime, settings: LearningSettings | None = None) -> None:
        self._runtime = runtime
        self.settings = settings or load_settings(LearningSettings)
        # Names this worker in the claims it holds: host, process, and this run.
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._poller: asyncio.Task[None] | None = None
        self._round: asyncio.Task[None] | None = None
        self._again = False
        self._stopping = False
        self._active: set[asyncio.Task[None]] = set()  # rounds and tries right after a reply
        # Per user being learned from right after a reply: the later messages waiting.
        self._waiting: dict[tuple[str, str], collections.deque[_Exchange]] = {}

    # -- the process ---------------------------------------------------------------------

    def start(self) -> None:
        """Start polling for due jobs (``open_runtime`` does this for every process)."""
        if self._poller is None and self.settings.worker:
            self._stopping = False
            self._poller = asyncio.create_task(self._poll(), name="liz-learning-poller")

    async def stop(self) -> None:
        """Stop polling and claiming; give tries under way ``shutdown_seconds`` to finish,
        then cancel them (their jobs go back to the queue, untouched)."""
        self._stopping = True
        poller, self._poller = self._poller, None
        if poller is not None:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller
        active = {task for task in self._active if not task.done()}
        if active:
            _, late = await asyncio.wait(active, timeout=self.settings.shutdown_seconds)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)

    def wake(self) -> None:
        """Look for due jobs now, in the background."""
        if self._stopping or self._runtime.facts is None:
            return
        if self._round is not None and not self._round.done():
            self._again = True
            return
        self._round = self._runtime.background.spawn(self._work_rounds(), name="liz-learning")
        self._track(self._round)

    async def work_due(self) -> None:
        """Try every due job now and wait until that is done."""
        self.wake()
        if self._round is not None:
            await asyncio.shield(self._round)

    async def _poll(self) -> None:
        clock = self._runtime.clock
        while not self._stopping:
            try:
                await self.work_due()
            except Exception:  # the outermost edge of the poller: log, keep polling
                logger.exception("learning worker: a round failed; trying again later")
            await clock.sleep(self.settings.poll_seconds)

    async def _work_rounds(self) -> None:
        while not self._stopping:
            self._again = False
            claimed, outage = await self._work_batch()
            if outage:
                break  # the LLM or the database is down: the next poll tries again
            if not claimed and not self._again:
                break

    async def _work_batch(self) -> tuple[int, bool]:
        facts = self._runtime.facts
        if facts is None:
            return 0, False
        try:
            claimed = await self._claim(limit=self.settings.concurrency)
        except Exception as exc:
            logger.warning("learning worker: cannot claim jobs: %s", describe(exc))
            return 0, True
        results = await asyncio.gather(*(self._try_once(facts, job) for job in claimed))
        return len(claimed), any(results)

    # -- right after a reply -------------------------------------------------------------

    async def learn_now(
        self,
        memory_id: str,
        exchange: list[dict[str, str]],
        *,
        attempts: int,
        wait_seconds: float,
        user: tuple[str, str] | None = None,
    ) -> None:
        """Learn from the exchange just replied to, if its job heads its user's queue;
        retry ``attempts`` times, then leave the job to the queue. Never raises.

        With ``user`` (agent id, user id): while this process is learning from an
        earlier message of that user, this one waits its turn here rather than trying
        a claim that cannot succeed (only the head of a user's queue can be claimed);
        the job stays queued meanwhile, so a crash loses nothing.
        """
        facts = self._runtime.facts
        if facts is None or self._stopping:
            return
        task = asyncio.current_task()
        if task is not None:
            self._track(task)
        if user is None:
            await self._learn_now_once(memory_id, exchange, attempts, wait_seconds)
            self.wake()  # this user's next message, and anything else due
            return
        waiting = self._waiting.get(user)
        if waiting is not None:
            waiting.append((memory_id, exchange, attempts, wait_seconds))
            return
        waiting = self._waiting[user] = collections.deque()
        try:
            await self._learn_now_once(memory_id, exchange, attempts, wait_seconds)
            while waiting and not self._stopping:
                await self._learn_now_once(*waiting.popleft())
        finally:
            del self._waiting[user]
        # Not after each message: a round started meanwhile would race this loop for
        # the user's next job. Now: anything else due (or left here by a stop).
        self.wake()

    async def _learn_now_once(
        self,
        memory_id: str,
        exchange: list[dict[str, str]],
        attempts: int,
        wait_seconds: float,
    ) -> None:
        facts = self._runtime.facts
        if facts is None or self._stopping:
            return
        try:
            claimed = await self._claim(memory_id=memory_id)
        except Exception as exc:
            logger.warning("learning: cannot claim the job of message %s: %s", memory_id, exc)
            return
        if not claimed:
            self.wake()  # an earlier message of this user comes first
            return
        (job,) = claimed
        tries = 0
        try:
            async for attempt in retrying(
                retry_if=lambda exc: not self._stopping and worth_retrying(exc, 0, self.settings),
                attempts=attempts,
                wait=wait_exponential(multiplier=wait_seconds, max=max(wait_seconds * 16, 0.0)),
                clock=self._runtime.clock,
            ):
                with attempt:
                    tries = attempt.retry_state.attempt_number
                    if tries > 1:
                        logger.info("learning from message %s: attempt %d", memory_id, tries)
                        if not await self._renew(job):
                            return  # another worker has taken it over
                    await self._learn(facts, job, exchange)
        except AlreadyLearned:
            pass
        except asyncio.CancelledError:
            await self._release(job)
            raise
        except Exception as exc:
            await self._failed(job, exc, tries, right_after_reply=True)

    # -- one job ---------------------------------------------------------------------------

    async def _try_once(self, facts: FactStore, job: Job) -> bool:
        """Try a claimed job once; True when it failed because of an outage."""
        try:
            async with self._runtime.sessions() as session:
                exchange = await jobs.exchange_of(session, job)
            if exchange is None:
                await self._give_up(job, 1, f"message {job.memory_id} is no longer stored")
                return False
            await self._learn(facts, job, exchange)
        except AlreadyLearned:
            return False
        except asyncio.CancelledError:
            await self._release(job)
            raise
        except Exception as exc:
            await self._failed(job, exc, 1)
            return is_outage(exc)
        return False

    def _track(self, task: asyncio.Task[None]) -> None:
        self._active.add(task)
        task.add_done_callback(self._active.discard)

    async def _learn(self, facts: FactStore, job: Job, exchange: list[dict[str, str]]) -> None:
        async def finish_in(session: AsyncSession) -> None:
            if not await jobs.finish(session, job.id):
                raise AlreadyLearned(job.memory_id)

        await facts.add(
            exchange,
            job.agent_id,
            job.user_id,
            source_memory_id=job.memory_id,
            agent_name=job.agent_name,
            on_commit=finish_in,
        )
        # Nothing new was written (no facts, or all known): the job is done all the same.
        async with self._runtime.sessions() as session, session.begin():
            await jobs.finish(session, job.id)

    async def _failed(
        self, job: Job, error: Exception, tries: int, *, right_after_reply: bool = False
    ) -> None:
        attempts = job.attempts + tries
        reason = describe(error)
        # Right after a reply, a failure is news (logged as the extract_facts step's);
        # later tries of a job already known to fail are routine until one succeeds.
        log = logging.getLogger(EXTRACT_FACTS_LOGGER) if right_after_reply else logger
        if worth_retrying(error, attempts, self.settings):
            due = next_try(error, attempts, self._runtime.clock.now(), self.settings)
            log.log(
                logging.ERROR if right_after_reply else logging.WARNING,
                "could not extract facts for agent %s, user %s after %d attempts (%s); "
                "queued to try again at %s",
                job.agent_id,
                job.user_id,
                attempts,
                reason,
                due.isoformat(timespec="seconds"),
            )
            await self._write(
                lambda s: jobs.retry_later(
                    s,
                    job.id,
                    self.owner,
                    tries=tries,
                    error=reason,
                    due=due,
                    now=self._runtime.clock.now(),
                )
            )
        else:
            log.error(
                "could not extract facts for agent %s, user %s after %d attempts: %s; "
                "no retry can fix this (see `liz facts queue --failed`, `liz facts retry`)",
                job.agent_id,
                job.user_id,
                attempts,
                reason,
            )
            await self._give_up(job, tries, reason)

    async def _release(self, job: Job) -> None:
        now = self._runtime.clock.now()
        await self._write(lambda s: jobs.release(s, job.id, self.owner, now))

    async def _give_up(self, job: Job, tries: int, reason: str) -> None:
        now = self._runtime.clock.now()
        await self._write(
            lambda s: jobs.give_up(s, job.id, self.owner, tries=tries, reason=reason, now=now)
        )

    # -- the database --------------------------------------------------------------------

    async def _claim(self, *, limit: int = 1, memory_id: str | None = None) -> Sequence[Job]:
        now = self._runtime.clock.now()
        async with self._runtime.sessions() as session, session.begin():
            return await jobs.claim(
                session,
                owner=self.owner,
                now=now,
                until=jobs.lease_end(now, self.settings.lease_seconds),
                limit=limit,
                memory_id=memory_id,
            )

    async def _renew(self, job: Job) -> bool:
        until = jobs.lease_end(self._runtime.clock.now(), self.settings.lease_seconds)
        async with self._runtime.sessions() as session, session.begin():
            return await jobs.renew(session, job.id, self.owner, until)

    async def _write(self, change: _Change) -> None:
        """Record a try's outcome; if even that fails, the claim runs out and the job is
        tried again, so nothing is lost."""
        try:
            async with self._runtime.sessions() as session, session.begin():
                await change(session)
        except Exception as exc:
            logger.warning("learning worker: cannot record a try's outcome: %s", describe(exc))


if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    _Change = Callable[[AsyncSession], Awaitable[None]]
    # A message to learn from right after its reply: memory id, exchange, attempts, wait.
    _Exchange = tuple[str, list[dict[str, str]], int, float]
