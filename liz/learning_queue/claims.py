"""One worker's claims on learning jobs, and the outcome of each try, in the queue.

A claim is a lease: it runs out ``lease_seconds`` after it was taken unless renewed,
and :meth:`Claims.kept` renews it while the work goes on, so a killed process's jobs
are taken over soon after. Claims of processes on this host that are gone are given
back when a worker starts (:meth:`Claims.release_dead`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.learning_queue import jobs
from liz.learning_queue.jobs import Job
from liz.learning_queue.outcomes import describe, is_server_error, next_try, worth_retrying
from liz.learning_queue.settings import LearningSettings
from liz.learning_queue.work import messages
from liz.types import Clock

logger = logging.getLogger(__name__)

Change = Callable[[AsyncSession], Awaitable[None]]


class Claims:
    """Claims, renewals and outcomes of one worker, named by ``owner``."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        clock: Clock,
        settings: LearningSettings,
    ) -> None:
        self._sessions = sessions
        self._clock = clock
        self._settings = settings
        self.host = socket.gethostname()
        # Names this worker in the claims it holds: host, process, and this run.
        self.owner = f"{self.host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        # Rounds learned so far, and that count when each failing job last failed: a
        # server error after others were learned is the message's doing.
        self._learned = 0
        self._failed_at: dict[int, int] = {}

    async def claim_runs(
        self, *, users: int = 1, memory_ids: Sequence[str] | None = None
    ) -> list[list[Job]]:
        now = self._clock.now()
        async with self._sessions() as session, session.begin():
            return await jobs.claim_runs(
                session,
                owner=self.owner,
                now=now,
                until=jobs.lease_end(now, self._settings.lease_seconds),
                users=users,
                run=self._settings.batch_size,
                memory_ids=memory_ids,
            )

    async def renew(self, claimed: Sequence[Job]) -> bool:
        """Extend the claims; False when one is done or another worker has it."""
        until = jobs.lease_end(self._clock.now(), self._settings.lease_seconds)
        async with self._sessions() as session, session.begin():
            return await jobs.renew_all(session, [job.id for job in claimed], self.owner, until)

    @contextlib.asynccontextmanager
    async def kept(self, claimed: Sequence[Job]) -> AsyncIterator[None]:
        """Renew the claims every third of a lease while the block runs."""
        renewing = asyncio.create_task(self._keep_renewing(list(claimed)), name="liz-lease")
        try:
            yield
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing

    async def _keep_renewing(self, claimed: list[Job]) -> None:
        while True:
            await self._clock.sleep(self._settings.lease_seconds / 3)
            try:
                if not await self.renew(claimed):
                    return  # done, or taken over: the try finds out when it commits
            except Exception as exc:  # the claim may run out; the try goes on
                logger.warning(
                    "learning: cannot renew the claims on %s: %s", messages(claimed), exc
                )

    async def release_dead(self) -> int:
        """Give back the claims held by processes of this host that are gone."""
        prefix = f"{self.host}:"
        async with self._sessions() as session, session.begin():
            owners = await jobs.claim_owners(session, prefix)
            dead = [owner for owner in owners if owner != self.owner and not _alive(owner)]
            released = await jobs.release_owners(session, dead, self._clock.now())
        if released:
            logger.info("learning: took back %d jobs claimed by processes that are gone", released)
        return released

    async def release(self, claimed: Sequence[Job], *, due: datetime | None = None) -> None:
        """Give back the claims on ``claimed`` (those done or taken over are left alone),
        to be tried from ``due`` on when given, else at once."""
        now = self._clock.now()
        await self._write(
            *(
                functools.partial(jobs.release, job_id=job.id, owner=self.owner, now=now, due=due)
                for job in claimed
            )
        )

    async def give_up(self, job: Job, tries: int, reason: str) -> None:
        now = self._clock.now()
        await self._write(self._give_up(job, tries, reason, now))

    def blamed(self, error: BaseException, claimed: Sequence[Job]) -> bool:
        """A server error, while other messages were learned since these last failed:
        the messages' own doing, counted against their tries."""
        return is_server_error(error) and any(
            self._failed_at.get(job.id, self._learned) < self._learned for job in claimed
        )

    @property
    def learned(self) -> int:
        """Rounds learned so far by this worker."""
        return self._learned

    def succeeded(self, claimed: Sequence[Job]) -> None:
        self._learned += 1
        for job in claimed:
            self._failed_at.pop(job.id, None)

    async def failed(
        self,
        claimed: Sequence[Job],
        error: Exception,
        tries: int,
        *,
        right_after_reply: bool = False,
    ) -> None:
        """Record failed tries: each job is retried later, or set aside with the reason."""
        blamed = self.blamed(error, claimed)
        for job in claimed:
            self._failed_at[job.id] = self._learned
        reason = describe(error)
        # Right after a reply a failure is news; later tries of a job known to fail are
        # routine until one succeeds.
        level = logging.ERROR if right_after_reply else logging.WARNING
        now = self._clock.now()
        changes: list[Change] = []
        for job in claimed:
            attempts = job.attempts + tries
            if worth_retrying(error, attempts, self._settings, blamed=blamed):
                due = next_try(error, attempts, now, self._settings)
                logger.log(
                    level,
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
                logger.error(
                    "could not extract facts for agent %s, user %s after %d attempts: %s; "
                    "set aside, the user's later messages go on (see `liz facts queue "
                    "--failed`, `liz facts retry`)",
                    job.agent_id,
                    job.user_id,
                    attempts,
                    reason,
                )
                changes.append(self._give_up(job, tries, reason, now))
                self._failed_at.pop(job.id, None)
        await self._write(*changes)

    def _give_up(self, job: Job, tries: int, reason: str, now: datetime) -> Change:
        return functools.partial(
            jobs.give_up, job_id=job.id, owner=self.owner, tries=tries, reason=reason, now=now
        )

    async def _write(self, *changes: Change) -> None:
        """Record tries' outcomes, in one transaction; if even that fails, the claims
        run out and the jobs are tried again, so nothing is lost."""
        if not changes:
            return
        try:
            async with self._sessions() as session, session.begin():
                for change in changes:
                    await change(session)
        except Exception as exc:
            logger.warning("learning worker: cannot record a try's outcome: %s", describe(exc))


def _alive(owner: str) -> bool:
    """Whether the process named in ``owner`` (host:pid:run, of this host) still runs."""
    try:
        pid = int(owner.split(":")[1])
    except (IndexError, ValueError):
        return True  # not a name this code wrote: leave its claims to run out
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process, alive
    return True
