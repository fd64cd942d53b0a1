"""The worker that learns facts from queued messages, in every liz process.

A job is tried once its user's conversation has gone quiet (``learn_now``, with the
user's other messages said here: see liz.learning_queue.bursts; then once the turns give
way: see liz.runtime.turns_under_way), by this process's poller when it is due, or by
any other process sharing
the database, always through one claim (liz.learning_queue.claims). Up to
``batch_size`` ready messages of one user are learned in one round; a round that fails
for another reason than an outage, or with a server error one message may cause every
time (a 500), is tried again one message at a time, so a message that cannot be learned
from holds up no other. When the first two tried alone fail too and none succeeds, the
endpoint is down: the rest wait for the next try, as in any outage. The job rows are
deleted in the facts' own transaction, and that delete must find every row, else the
facts are rolled back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from tenacity import wait_exponential

from liz.facts.domain import Exchange, ExtraStatement, ExtraStatementMismatch
from liz.learning_queue import jobs
from liz.learning_queue.beats import Beats, learn_at
from liz.learning_queue.bursts import Burst
from liz.learning_queue.claims import Claims
from liz.learning_queue.jobs import Job
from liz.learning_queue.outcomes import (
    affects_every_message,
    describe,
    is_outage,
    may_be_one_messages_doing,
    worth_retrying,
)
from liz.learning_queue.settings import LearningSettings
from liz.learning_queue.work import AlreadyLearned, Claimed, Said, Work, jobs_of, messages
from liz.observe.learning import observe_learning
from liz.observe.turn_observation import UsageInCommit
from liz.runtime.background import BackgroundTasks
from liz.runtime.retry import retrying
from liz.runtime.turns_under_way import TurnsUnderWay
from liz.types import Clock

if TYPE_CHECKING:
    from liz.facts.shared_embedding import Seat
    from liz.facts.store import FactStore
    from liz.observe.budgets import DailyBudgets

logger = logging.getLogger(__name__)


class LearningWorker:
    """Works the learning queue for one process; ``runtime.learning``.

    ``facts`` may be swapped later (``runtime.facts = ...``); None: nothing to learn.
    """

    def __init__(
        self,
        *,
        facts: FactStore | None,
        sessions: async_sessionmaker[AsyncSession],
        clock: Clock,
        settings: LearningSettings,
        turns: TurnsUnderWay,
        background: BackgroundTasks,
        budgets: DailyBudgets | None = None,
    ) -> None:
        self.facts = facts
        self._budgets = budgets
        self.settings = settings
        self._sessions = sessions
        self._clock = clock
        self._turns = turns
        self._background = background
        self.claims = Claims(sessions, clock, settings)
        self._poller: asyncio.Task[None] | None = None
        self._round: asyncio.Task[None] | None = None
        self._again = False
        self._stopping = False
        self._active: set[asyncio.Task[None]] = set()  # rounds and bursts of said messages
        # Per user: the messages said here, gathering or waiting for the round under way.
        self._bursts: dict[tuple[str, str], Burst] = {}
        self._beats = Beats()  # the bursts learned at each beat share an embeddings request
        self._drain = asyncio.Event()  # stopping: every burst is learned now

    @property
    def owner(self) -> str:
        return self.claims.owner

    # -- the process ---------------------------------------------------------------------

    def start(self) -> None:
        """Start polling for due jobs (``open_runtime`` does this for every process)."""
        if self._poller is None and self.settings.worker:
            self._stopping = False
            self._drain.clear()
            self._poller = asyncio.create_task(self._poll(), name="liz-learning-poller")

    async def stop(self) -> None:
        """Stop polling; learn the bursts gathered here at once (one try each), giving
        them and tries under way ``shutdown_seconds`` to finish, then cancel them (their
        jobs go back to the queue, untouched)."""
        self._stopping = True
        self._drain.set()
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
        if self._stopping or self.facts is None:
            return
        if self._round is not None and not self._round.done():
            self._again = True
            return
        self._round = self._background.spawn(self._work_rounds(), name="liz-learning")
        self._track(self._round)

    async def work_due(self) -> None:
        """Try every due job now and wait until that is done."""
        self.wake()
        if self._round is not None:
            await asyncio.shield(self._round)

    async def _poll(self) -> None:
        try:
            await self.claims.release_dead()
        except Exception as exc:  # the claims run out instead
            logger.warning("learning worker: cannot look for dead claims: %s", describe(exc))
        while not self._stopping:
            try:
                await self.work_due()
            except Exception:  # the outermost edge of the poller: log, keep polling
                logger.exception("learning worker: a round failed; trying again later")
            await self._clock.sleep(self.settings.poll_seconds)

    async def _work_rounds(self) -> None:
        while not self._stopping:
            self._again = False
            await self._give_way(self._clock.now() + self._defer)
            claimed, outage = await self._work_batch()
            if outage:
                break  # the LLM or the database is down: the next poll tries again
            if not claimed and not self._again:
                break

    async def _work_batch(self) -> tuple[int, bool]:
        facts = self.facts
        if facts is None:
            return 0, False
        try:
            runs = await self.claims.claim_runs(users=self.settings.concurrency)
        except Exception as exc:
            logger.warning("learning worker: cannot claim jobs: %s", describe(exc))
            return 0, True
        results = await asyncio.gather(*(self._try_run(facts, run) for run in runs))
        return sum(len(run) for run in runs), any(results)

    # -- after a reply -------------------------------------------------------------------

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

        With ``user`` (agent id, user id), the user's messages said here gather into a
        burst (liz.learning_queue.bursts) that the first call learns, the later add to;
        their jobs stay queued meanwhile: a crash loses nothing.
        """
        if self.facts is None or self._stopping:
            return
        task = asyncio.current_task()
        if task is not None:
            self._track(task)
        now = self._clock.now()
        # It waits for a lull in turns at most that long after its burst could be learned.
        defer_until = learn_at(now, self.settings.learn_after_idle) + self._defer
        said = Said(memory_id, exchange, attempts, wait_seconds, now, defer_until)
        if user is None:
            await self._learn_now_round([said])
            self.wake()  # this user's next message, and anything else due
            return
        burst = self._bursts.get(user)
        if burst is not None:
            burst.add(said)
            return
        burst = self._bursts[user] = Burst(self._clock, self._beats, self.settings, self._drain)
        burst.add(said)
        try:
            await burst.learn(self._learn_now_round)
        finally:
            del self._bursts[user]
        # Not after each round: a round started meanwhile would race this loop for the
        # user's next jobs. Now: anything else due (or left here by a stop).
        self.wake()

    async def _learn_now_round(self, batch: Sequence[Said], seat: Seat | None = None) -> None:
        await self._give_way(until=batch[0].defer_until)  # the oldest message's
        facts = self.facts
        if facts is None:
            return
        held = {said.memory_id: said.exchange for said in batch}
        try:
            runs = await self.claims.claim_runs(memory_ids=list(held))
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
        if await self._over_budget(run):
            return
        work = [Claimed(job, held[job.memory_id]) for job in run]
        first = batch[0]
        async with self.claims.kept(run):
            await self._learn_with_retries(facts, work, first.attempts, first.wait_seconds, seat)

    async def _learn_with_retries(
        self, facts: FactStore, work: Work, attempts: int, wait: float, seat: Seat | None = None
    ) -> None:
        """Learn the claimed work, retrying; a retry goes without ``seat`` (alone)."""
        claimed = jobs_of(work)
        together = len(work) > 1

        def retry_now(error: BaseException) -> bool:
            if self._stopping:
                return False
            if together:  # else one by one, below
                return affects_every_message(error) and not self.claims.blamed(error, claimed)
            return worth_retrying(error, 0, self.settings)

        tries = 0
        try:
            async for attempt in retrying(
                retry_if=retry_now,
                attempts=attempts,
                wait=wait_exponential(multiplier=wait, max=max(wait * 16, 0.0)),
                clock=self._clock,
            ):
                with attempt:
                    tries = attempt.retry_state.attempt_number
                    if tries > 1:
                        logger.info("learning from %s: attempt %d", messages(claimed), tries)
                        if not await self.claims.renew(claimed):
                            await self.claims.release(claimed)  # another worker took over
                            return
                    await self._learn(facts, work, seat if tries == 1 else None)
                    self.claims.succeeded(claimed)
        except AlreadyLearned:
            await self.claims.release(claimed)
        except asyncio.CancelledError:
            await self.claims.release(claimed)
            raise
        except Exception as exc:
            if self._one_by_one(work, exc):
                # Once each: what is left to retry, the queue retries, with backoff.
                await self._each(
                    work, exc, lambda one: self._learn_with_retries(facts, one, 1, wait)
                )
                return
            await self.claims.failed(claimed, exc, tries, right_after_reply=True)

    # -- claimed jobs ----------------------------------------------------------------------

    async def _try_run(self, facts: FactStore, run: Sequence[Job]) -> bool:
        """Try a claimed run of one user's jobs once, together; True when it failed
        because of an outage."""
        if await self._over_budget(run):
            return False
        try:
            async with self._sessions() as session:
                exchanges = await jobs.exchanges_of(session, run)
        except asyncio.CancelledError:
            await self.claims.release(run)
            raise
        except Exception as exc:
            await self.claims.failed(run, exc, 1)
            return is_outage(exc)
        work: Work = []
        for job, exchange in zip(run, exchanges, strict=True):
            if exchange is None:
                await self.claims.give_up(job, 1, f"message {job.memory_id} is no longer stored")
            else:
                work.append(Claimed(job, exchange))
        if not work:
            return False
        async with self.claims.kept(jobs_of(work)):
            return await self._try_once(facts, work)

    async def _try_once(self, facts: FactStore, work: Work) -> bool:
        claimed = jobs_of(work)
        try:
            await self._learn(facts, work)
            self.claims.succeeded(claimed)
        except AlreadyLearned:
            await self.claims.release(claimed)
            return False
        except asyncio.CancelledError:
            await self.claims.release(claimed)
            raise
        except Exception as exc:
            if self._one_by_one(work, exc):
                outages: list[bool] = []

                async def try_one(one: Work) -> None:
                    outages.append(await self._try_once(facts, one))

                await self._each(work, exc, try_one)
                return any(outages)
            outage = is_outage(exc) and not self.claims.blamed(exc, claimed)
            await self.claims.failed(claimed, exc, 1)
            return outage
        return False

    async def _each(
        self, work: Work, error: Exception, learn: Callable[[Work], Awaitable[None]]
    ) -> None:
        """``learn`` each claimed job on its own, in order, after they failed together
        with ``error``; if cancelled, give back the claims of those not tried yet.

        After a 500, when the first two tried alone fail as well and none is
        learned, the endpoint is down rather than one message at fault: the rest are
        recorded as failed with ``error`` (an outage's retry), not tried one by one.
        """
        learned_before = self.claims.learned
        try:
            for tried, item in enumerate(work):
                if (
                    tried >= 2
                    and may_be_one_messages_doing(error)
                    and self.claims.learned == learned_before
                ):
                    await self.claims.failed(jobs_of(work[tried:]), error, 1)
                    return
                await learn([item])
        except asyncio.CancelledError:
            await self.claims.release(jobs_of(work))
            raise

    def _one_by_one(self, work: Work, error: Exception) -> bool:
        """Whether messages that failed together are tried again one by one."""
        claimed = jobs_of(work)
        if len(work) < 2 or self._stopping:
            return False
        one_message_may_cause_it = may_be_one_messages_doing(error)
        if (
            affects_every_message(error)
            and not one_message_may_cause_it
            and not self.claims.blamed(error, claimed)
        ):
            return False
        job = claimed[0]
        logger.warning(
            "learning %d messages of agent %s, user %s together failed (%s); "
            "learning them one by one",
            len(work),
            job.agent_id,
            job.user_id,
            describe(error),
        )
        return True

    async def _over_budget(self, run: Sequence[Job]) -> bool:
        """Whether the run's user or agent has spent today's budget: then its jobs wait,
        unclaimed and untried, until the budget resets (never dropped)."""
        job = run[-1]
        if self._budgets is None or not self._budgets.enabled:
            return False
        try:
            refusal = await self._budgets.refusal(job.agent_id, job.user_id)
        except Exception as exc:  # the try itself meets the outage, and says so
            logger.warning("learning: cannot read today's spending: %s", describe(exc))
            return False
        if refusal is None:
            return False
        what = f"learning for agent {job.agent_id}, user {job.user_id} waits until it resets"
        self._budgets.log_once(f"learning:{refusal.whose}", refusal, what)
        await self.claims.release(run, due=refusal.resets_at)
        return True

    # -- waiting -------------------------------------------------------------------------

    @property
    def _defer(self) -> timedelta:
        return timedelta(seconds=self.settings.max_defer_seconds)

    async def _give_way(self, until: datetime) -> None:
        """Wait for a lull in this process's turns (see ``liz.runtime.turns_under_way``),
        until ``until`` at the latest."""
        if self.settings.max_defer_seconds > 0:
            await self._turns.lull(self.settings.quiet_seconds, until)

    def _track(self, task: asyncio.Task[None]) -> None:
        self._active.add(task)
        task.add_done_callback(self._active.discard)

    async def _learn(self, facts: FactStore, work: Work, seat: Seat | None = None) -> None:
        # The jobs are deleted in the facts' own transaction; a row already gone (another
        # worker learned the message) rolls the facts back.
        ids = [item.job.id for item in work]
        finish = ExtraStatement(jobs.finish_statement(ids), expected_rows=len(set(ids)))
        latest = work[-1].job
        queued_by = [item.job.traceparent for item in work]
        with observe_learning(latest.agent_id, queued_by, jobs=len(work)) as usage:
            # The tokens spent are counted in the same transaction as the facts, once.
            spent = UsageInCommit(usage, latest.agent_id, latest.user_id, self._clock.now())
            try:
                await facts.learn(
                    [Exchange(item.exchange, item.job.memory_id) for item in work],
                    latest.agent_id,
                    latest.user_id,
                    agent_name=latest.agent_name,
                    also=[finish, ExtraStatement(made_at_commit=spent.statements)],
                    seat=seat,
                )
            except ExtraStatementMismatch as exc:
                raise AlreadyLearned(messages(jobs_of(work))) from exc
            spent.committed()
