"""The Twitter/X bot: a post loop and a reply loop for one agent, run by one process at a time.

``TwitterBot.start`` returns at once, the loops running as asyncio tasks, until ``stop``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TypeVar

from liz.agent import BaseAgent
from liz.connectors.leader import LeaderLock, leader_lock_for, wait_for_leadership
from liz.errors import UsageError
from liz.pipeline import AgentFramework
from liz.twitter.context import BotContext
from liz.twitter.errors import FATAL_ERRORS
from liz.twitter.posting import first_post_time, write_and_post
from liz.twitter.replying import ReplyCycle
from liz.twitter.retry import bot_retrying, is_worth_retrying
from liz.twitter.settings import TwitterSettings
from liz.twitter.transport import TwitterTransport, TwitterUser
from liz.types import Clock, SystemClock

logger = logging.getLogger(__name__)
T = TypeVar("T")


class LeadershipLost(Exception):
    """Another process may now run the loops; this one goes back to standby."""


class TwitterBot:
    """Posts on a schedule and answers mentions for ``agent``, through ``framework``.

    ``clock`` and ``rng`` are injectable so tests control time and randomness;
    ``leader`` defaults to the lock that fits the runtime's database.
    """

    def __init__(
        self,
        agent: BaseAgent,
        framework: AgentFramework,
        transport: TwitterTransport,
        settings: TwitterSettings,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        leader: LeaderLock | None = None,
    ) -> None:
        self.agent = agent
        self.framework = framework
        self.transport = transport
        self.settings = settings
        self.clock = clock or SystemClock()
        self.rng = rng or random.Random()
        self.leader = leader or leader_lock_for(framework.runtime.engine, agent.agent_id)
        self.account: TwitterUser | None = None
        self.is_leader = False
        self.next_post_at: datetime | None = None
        # The fatal error that stopped the loops, if one did.
        self.failure: Exception | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Start the loops in the background (they wait for the leader lock first)."""
        if self.running:
            raise UsageError("this TwitterBot is already running; call stop() first")
        self.framework.runtime.llm  # noqa: B018 -- raises LLMNotConfigured now, not hours later
        self._task = asyncio.create_task(self._supervise(), name=f"twitter:{self.agent.agent_id}")

    async def stop(self) -> None:
        """Stop the loops, release the leader lock and close nothing else; idempotent."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            # The loops' own cancellation is the point; a cancellation of the
            # caller of stop() must go on, not end here.
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
        except FATAL_ERRORS:
            pass  # already logged and kept in ``self.failure``

    async def run(self) -> None:
        """Run until cancelled; raises the fatal error (bad credentials, no LLM) that stopped it."""
        await self.start()
        task = self._task
        if task is None:  # pragma: no cover - start() always sets it
            return
        try:
            await task
        finally:
            await self.stop()

    async def _supervise(self) -> None:
        try:
            await self._lead_whenever_possible()
        except FATAL_ERRORS as exc:
            self.failure = exc
            logger.error("agent %s: Twitter loops stopped: %s", self.agent.agent_id, exc)
            raise

    async def _lead_whenever_possible(self) -> None:
        while True:
            await wait_for_leadership(
                self.leader,
                self.clock,
                self.settings.leader_retry_seconds,
                who=f"agent {self.agent.agent_id}",
                standby="another process runs its Twitter loops",
            )
            logger.info("agent %s: running the Twitter loops", self.agent.agent_id)
            self.is_leader = True
            try:
                await self._lead()
            except LeadershipLost:
                logger.warning("agent %s: lost the leader lock; standing by", self.agent.agent_id)
            finally:
                self.is_leader = False
                await self.leader.release()

    async def _lead(self) -> None:
        if self.account is None:
            self.account = await self._retrying("asking X for the account", self.transport.me)
        ctx = BotContext(
            agent=self.agent,
            framework=self.framework,
            transport=self.transport,
            settings=self.settings,
            clock=self.clock,
            account=self.account,
        )
        tasks = [
            asyncio.create_task(self._post_loop(ctx), name="twitter-posts"),
            asyncio.create_task(self._reply_loop(ctx), name="twitter-replies"),
        ]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()  # re-raises the failure that ended a loop
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _post_loop(self, ctx: BotContext) -> None:
        self.next_post_at = await self._retrying(
            "reading the last post's time", lambda: first_post_time(ctx, self.rng)
        )
        while True:
            wait = (self.next_post_at - self.clock.now()).total_seconds()
            if wait > 0:
                await self.clock.sleep(wait)
            await self._retrying("post cycle", lambda: write_and_post(ctx), as_leader=True)
            self.next_post_at = self.clock.now() + self.settings.post_interval(self.rng)

    async def _reply_loop(self, ctx: BotContext) -> None:
        cycle = ReplyCycle(ctx, started_at=self.clock.now())
        while True:
            await self._retrying("reply cycle", cycle.run, as_leader=True)
            await self.clock.sleep(self.settings.polling_interval * 60)

    async def _retrying(
        self, what: str, call: Callable[[], Awaitable[T]], *, as_leader: bool = False
    ) -> T:
        """``await call()`` until it succeeds: fatal errors and a lost leader lock are raised
        at once, others waited out (a rate limit until its reset, else with backoff)."""
        async for attempt in bot_retrying(
            self.settings, self.clock, what=what, retry_if=_worth_retrying
        ):
            with attempt:
                if as_leader and not await self.leader.still_held():
                    raise LeadershipLost()
                return await call()
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover


def _worth_retrying(error: BaseException) -> bool:
    return is_worth_retrying(error) and not isinstance(error, LeadershipLost)
