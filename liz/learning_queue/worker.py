"""The worker that learns facts from queued messages, in every liz process.

Three ways a job gets tried, all through one claim, so a job is tried by one
worker at a time and its facts are written once:

- right after the reply (``learn_now``, from the ``extract_facts`` step), with the
  exchange in hand and a few quick retries, once the process's turns give way (no
  turn under way for ``quiet_seconds``, or ``max_defer_seconds`` gone by; liz.turns);
- by this process's poller, every ``poll_seconds`` or when woken, for jobs that
  are due: retried after an outage, a reply that never came, a crash elsewhere;
- by any other process sharing the database (PostgreSQL), the same way.

When several messages of one user are ready (the later ones waiting here while an
earlier one is learned, or due together in the queue), up to ``batch_size`` of
them are claimed as a run from the head of the user's queue and learned in one
round (``FactStore.learn``: one extraction call, one embedding request, one
reconcile call, one commit). A round that fails for another reason than the LLM
or the database being unavailable is tried again one message at a time, so a
message that cannot be learned from holds up no other.

The job rows are deleted in the same transaction as the facts learned from them,
and that delete must find every row: a second worker that learned one of the same
messages (its claim ran out meanwhile) rolls its facts back.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncSession
from tenacity import wait_exponential

from liz.facts.domain import Exchange, ExtraStatement, ExtraStatementMismatch
from liz.learning_queue import jobs
from liz.learning_queue.jobs import Job
from liz.learning_queue.outcomes import (
    affects_every_message,
    describe,
    is_outage,
    next_try,
    worth_retrying,
)
from liz.learning_queue.settings import LearningSettings
from liz.observe.learning import observe_learning
from liz.observe.turns import store_learning_usage
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
            await self._give_way(
                asyncio.get_running_loop().time() + self.settings.max_defer_seconds
            )
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
            runs = await self._claim_runs(users=self.settings.concurrency)
        except Exception as exc:
            logger.warning("learning worker: cannot claim jobs: %s", describe(exc))
            return 0, True
        results = await asyncio.gather(*(self._try_run(facts, run) for run in runs))
        return sum(len(run) for run in runs), any(results)

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
        the messages waiting when that round ends are learned together in the next
        (``batch_size`` at most). The jobs stay queued meanwhile: a crash loses nothing.
        """
        facts = self._runtime.facts
        if facts is None or self._stopping:
            return
        task = asyncio.current_task()
        if task is not None:
            self._track(task)
        defer_until = asyncio.get_running_loop().time() + self.settings.max_defer_seconds
        said: _Exchange = (memory_id, exchange, attempts, wait_seconds, defer_until)
        if user is None:
            await self._learn_now_round([said])
            self.wake()  # this user's next message, and anything else due
            return
        waiting = self._waiting.get(user)
        if waiting is not None:
            waiting.append(said)
            return
        waiting = self._waiting[user] = collections.deque([said])
        try:
            while waiting and not self._stopping:
                count = min(len(waiting), self.settings.batch_size)
                await self._learn_now_round([waiting.popleft() for _ in range(count)])
        finally:
            del self._waiting[user]
        # Not after each round: a round started meanwhile would race this loop for the
        # user's next jobs. Now: anything else due (or left here by a stop).
        self.wake()

    async def _learn_now_round(self, batch: Sequence[_Exchange]) -> None:
        await self._give_way(until=batch[0][4])  # the oldest message's
        facts = self._runtime.facts
        if facts is None or self._stopping:
            return
        held = {memory_id: exchange for memory_id, exchange, _, _, _ in batch}
        try:
            runs = await self._claim_runs(memory_ids=list(held))
        except Exception as exc:
            logger.warning(
                "learning: cannot claim the jobs of messages %s: %s", ", ".join(held), exc
            )
            return
        if not runs:
            self.wake()  # an earlier message of this user comes first
            return
        # Messages of the batch left out of the run (one behind a message this process
        # does not hold) stay queued; their turn's end makes them due for the poller.
        (run,) = runs
        _, _, attempts, wait_seconds, _ = batch[0]
        work = [(job, held[job.memory_id]) for job in run]
        await self._learn_with_retries(facts, work, attempts, wait_seconds)

    async def _learn_with_retries(
        self, facts: FactStore, work: _Work, attempts: int, wait_seconds: float
    ) -> None:
        claimed = [job for job, _ in work]
        together = len(work) > 1

        def retry_now(error: BaseException) -> bool:
            if self._stopping:
                return False
            if together:  # else one by one, below
                return affects_every_message(error)
            return worth_retrying(error, 0, self.settings)

        tries = 0
        try:
            async for attempt in retrying(
                retry_if=retry_now,
                attempts=attempts,
                wait=wait_exponential(multiplier=wait_seconds, max=max(wait_seconds * 16, 0.0)),
                clock=self._runtime.clock,
            ):
                with attempt:
                    tries = attempt.retry_state.attempt_number
                    if tries > 1:
                        logger.info("learning from %s: attempt %d", _messages(claimed), tries)
                        if not await self._renew(claimed):
                            await self._release(claimed)  # another worker has taken over
                            return
                    await self._learn(facts, work)
        except AlreadyLearned:
            await self._release(claimed)
        except asyncio.CancelledError:
            await self._release(claimed)
            raise
        except Exception as exc:
            if together and not affects_every_message(exc) and not self._stopping:
                # Once each: what is left to retry, the queue retries, with backoff.
                self._one_by_one(work, exc)
                await self._each(
                    work, lambda one: self._learn_with_retries(facts, one, 1, wait_seconds)
                )
                return
            await self._failed(claimed, exc, tries, right_after_reply=True)

    # -- claimed jobs ----------------------------------------------------------------------

    async def _try_run(self, facts: FactStore, run: Sequence[Job]) -> bool:
        """Try a claimed run of one user's jobs once, together; True when it failed
        because of an outage."""
        try:
            async with self._runtime.sessions() as session:
                exchanges = await jobs.exchanges_of(session, run)
        except asyncio.CancelledError:
            await self._release(run)
            raise
        except Exception as exc:
            await self._failed(run, exc, 1)
            return is_outage(exc)
        work: _Work = []
        for job, exchange in zip(run, exchanges, strict=True):
            if exchange is None:
                await self._give_up(job, 1, f"message {job.memory_id} is no longer stored")
            else:
                work.append((job, exchange))
        return await self._try_once(facts, work) if work else False

    async def _try_once(self, facts: FactStore, work: _Work) -> bool:
        claimed = [job for job, _ in work]
        try:
            await self._learn(facts, work)
        except AlreadyLearned:
            await self._release(claimed)
            return False
        except asyncio.CancelledError:
            await self._release(claimed)
            raise
        except Exception as exc:
            if len(work) > 1 and not affects_every_message(exc) and not self._stopping:
                self._one_by_one(work, exc)
                outages: list[bool] = []

                async def try_one(one: _Work) -> None:
                    outages.append(await self._try_once(facts, one))

                await self._each(work, try_one)
                return any(outages)
            await self._failed(claimed, exc, 1)
            return is_outage(exc)
        return False

    async def _each(self, work: _Work, learn: Callable[[_Work], Awaitable[None]]) -> None:
        """``learn`` each claimed job on its own, in order; if cancelled, give back the
        claims of those not tried yet."""
        try:
            for item in work:
                await learn([item])
        except asyncio.CancelledError:
            await self._release([job for job, _ in work])
            raise

    def _one_by_one(self, work: _Work, error: Exception) -> None:
        job = work[0][0]
        logger.warning(
            "learning %d messages of agent %s, user %s together failed (%s); "
            "learning them one by one",
            len(work),
            job.agent_id,
            job.user_id,
            describe(error),
        )

    async def _give_way(self, until: float) -> None:
        """Wait for a lull in this process's turns (see ``liz.turns``), until ``until``
        (the event loop's time) at the latest."""
        if self.settings.max_defer_seconds > 0:
            await self._runtime.turns.lull(self.settings.quiet_seconds, until)

    def _track(self, task: asyncio.Task[None]) -> None:
        self._active.add(task)
        task.add_done_callback(self._active.discard)

    async def _learn(self, facts: FactStore, work: _Work) -> None:
        # The jobs are deleted in the facts' own transaction; a row already gone (another
        # worker learned the message) rolls the facts back.
        ids = [job.id for job, _ in work]
        finish = ExtraStatement(jobs.finish_statement(ids), expected_rows=len(set(ids)))
        latest = work[-1][0]
        queued_by = [job.traceparent for job, _ in work]
        with observe_learning(latest.agent_id, queued_by, jobs=len(work)) as usage:
            try:
                await facts.learn(
                    [Exchange(exchange, job.memory_id) for job, exchange in work],
                    latest.agent_id,
                    latest.user_id,
                    agent_name=latest.agent_name,
                    also=[finish],
                )
            except ExtraStatementMismatch as exc:
                raise AlreadyLearned(_messages([job for job, _ in work])) from exc
        await store_learning_usage(self._runtime, latest.agent_id, latest.user_id, usage)

    async def _failed(
        self,
        claimed: Sequence[Job],
        error: Exception,
        tries: int,
        *,
        right_after_reply: bool = False,
    ) -> None:
        reason = describe(error)
        # Right after a reply, a failure is news (logged as the extract_facts step's);
        # later tries of a job already known to fail are routine until one succeeds.
        log = logging.getLogger(EXTRACT_FACTS_LOGGER) if right_after_reply else logger
        now = self._runtime.clock.now()
        changes: list[_Change] = []
        for job in claimed:
            attempts = job.attempts + tries
            if worth_retrying(error, attempts, self.settings):
                due = next_try(error, attempts, now, self.settings)
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
                changes.append(
                    functools.partial(
                        jobs.retry_later,
                        job_id=job.id,
                        owner=self.owner,
                        tries=tries,
                        error=reason,
                        due=due,
                        now=now,
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
                changes.append(
                    functools.partial(
                        jobs.give_up,
                        job_id=job.id,
                        owner=self.owner,
                        tries=tries,
                        reason=reason,
                        now=now,
                    )
                )
        await self._write(*changes)

    async def _release(self, claimed: Sequence[Job]) -> None:
        """Give back this worker's claims on ``claimed`` (those done or taken over by
        another worker are left alone)."""
        now = self._runtime.clock.now()
        await self._write(
            *(
                functools.partial(jobs.release, job_id=job.id, owner=self.owner, now=now)
                for job in claimed
            )
        )

    async def _give_up(self, job: Job, tries: int, reason: str) -> None:
        now = self._runtime.clock.now()
        await self._write(
            functools.partial(
                jobs.give_up, job_id=job.id, owner=self.owner, tries=tries, reason=reason, now=now
            )
        )

    # -- the database --------------------------------------------------------------------

    async def _claim_runs(
        self, *, users: int = 1, memory_ids: Sequence[str] | None = None
    ) -> list[list[Job]]:
        now = self._runtime.clock.now()
        async with self._runtime.sessions() as session, session.begin():
            return await jobs.claim_runs(
                session,
                owner=self.owner,
                now=now,
                until=jobs.lease_end(now, self.settings.lease_seconds),
                users=users,
                run=self.settings.batch_size,
                memory_ids=memory_ids,
            )

    async def _renew(self, claimed: Sequence[Job]) -> bool:
        until = jobs.lease_end(self._runtime.clock.now(), self.settings.lease_seconds)
        async with self._runtime.sessions() as session, session.begin():
            return await jobs.renew_all(session, [job.id for job in claimed], self.owner, until)

    async def _write(self, *changes: _Change) -> None:
        """Record tries' outcomes, in one transaction; if even that fails, the claims
        run out and the jobs are tried again, so nothing is lost."""
        if not changes:
            return
        try:
            async with self._runtime.sessions() as session, session.begin():
                for change in changes:
                    await change(session)
        except Exception as exc:
            logger.warning("learning worker: cannot record a try's outcome: %s", describe(exc))


def _messages(claimed: Sequence[Job]) -> str:
    return "message " + ", ".join(job.memory_id for job in claimed)


if TYPE_CHECKING:
    _Change = Callable[[AsyncSession], Awaitable[None]]
    # A message to learn from right after its reply: memory id, exchange, attempts, wait,
    # and until when (the event loop's time) it waits for a lull in the turns.
    _Exchange = tuple[str, list[dict[str, str]], int, float, float]
    # Claimed jobs of one user with their exchanges, oldest first: learned in one round.
    _Work = list[tuple[Job, list[dict[str, str]]]]
