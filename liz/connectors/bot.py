"""A chat bot for one agent: read, answer through the chain, send; one process per bot.

Each cycle sends what the outbox holds, answers what the inbox holds, then reads
the platform (a long poll) and stores what came in the transaction that moves the
cursor. A message is answered by one turn of the app's chain, whose reply and
planned parts are committed together (:mod:`liz.connectors.outbox`). When the LLM
or the database is out, the message stays in the inbox and is answered once they
are back; reading goes on meanwhile, so nothing the platform holds is lost::

    bot = ChatBot(agent, framework, TelegramPlatform(settings), source=InputSource.TELEGRAM)
    await bot.run()  # until cancelled, or a refused token
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import timedelta

from liz.agent import BaseAgent
from liz.connectors import inbox
from liz.connectors.errors import ConnectorAuthError, ConnectorError, ConnectorRateLimited
from liz.connectors.leader import LeaderLock, bot_leader_lock, wait_for_leadership
from liz.connectors.outbox import reply_statements, send_unsent
from liz.connectors.platform import BotIdentity, ChatPlatform
from liz.connectors.tables import ConnectorInboxRecord
from liz.db.driver import Bound, connect
from liz.errors import LizError, StorageError
from liz.errors.caller import as_liz_error
from liz.pipeline import AgentFramework
from liz.types import AgentReply, Clock, InputObject, InputSource, SystemClock

logger = logging.getLogger(__name__)

# Errors that say nothing about the message: the LLM or the database is out for now.
_PASSING_STATUSES = frozenset({429, 502, 503, 504})
# Any other failure of a message's turn is tried this many times, then given up on.
_MAX_ATTEMPTS = 3
_ANSWER_BATCH = 20


class _WaitForBackend(Exception):
    """A turn failed for a reason that passes; answering pauses until the backoff ends."""


class ChatBot:
    """Answers ``agent``'s chats on one platform, through ``framework``'s chain."""

    def __init__(
        self,
        agent: BaseAgent,
        framework: AgentFramework,
        platform: ChatPlatform,
        *,
        source: InputSource,
        clock: Clock | None = None,
        leader: LeaderLock | None = None,
        leader_retry_seconds: float = 5.0,
        typing_after_seconds: float = 1.0,
        typing_every_seconds: float = 4.0,
        max_backoff_seconds: float = 60.0,
        agents: Mapping[str, BaseAgent] | None = None,
    ) -> None:
        self.agent = agent
        # A message stored for another agent (webhook mode: the URL names it) is
        # answered by that agent.
        self.agents = dict(agents or {agent.agent_id: agent})
        self.framework = framework
        self.platform = platform
        self.source = source
        self.clock = clock or SystemClock()
        self.leader = leader
        self.leader_retry_seconds = leader_retry_seconds
        self.typing_after_seconds = typing_after_seconds
        self.typing_every_seconds = typing_every_seconds
        self.max_backoff_seconds = max_backoff_seconds
        self.identity: BotIdentity | None = None
        # False while the outbox may hold parts to send: at the start of serving (a
        # stop may have left some), once a turn may have planned some, after a failed
        # send. Each answer's parts are sent right after it, so a cycle need not look.
        self._outbox_clear = False

    @property
    def bot_key(self) -> str:
        if self.identity is None:
            raise LizError("the bot has not identified itself yet")
        return f"{self.platform.name}:{self.identity.id}"

    async def run(self) -> None:
        """Check the token, wait to be the bot's one process, then serve until cancelled.

        Raises :class:`ConnectorAuthError` when the platform refuses the token.
        """
        self.identity = await self.platform.identify()
        logger.info(
            "%s bot @%s (id %s) answers for agent %s",
            self.platform.name,
            self.identity.username,
            self.identity.id,
            ", ".join(sorted(self.agents)),
        )
        leader = self.leader or bot_leader_lock(self.framework.runtime.engine, self.bot_key)
        try:
            while True:
                await self._wait_for_leadership(leader)
                await self._serve(leader)
                logger.warning("%s: lost the leader lock; standing by", self.bot_key)
        finally:
            await leader.release()

    async def _wait_for_leadership(self, leader: LeaderLock) -> None:
        await wait_for_leadership(
            leader,
            self.clock,
            self.leader_retry_seconds,
            who=self.bot_key,
            standby="another process runs this bot",
        )
        logger.info("%s: reading and answering", self.bot_key)

    async def _serve(self, leader: LeaderLock) -> None:
        """Cycle until the leader lock is lost."""
        sessions = self.framework.runtime.sessions
        async with sessions() as session:
            position = await inbox.cursor(session, self.bot_key)
        # Two backoffs: reading goes on while answering waits for the LLM to come back.
        read_backoff = answer_backoff = 0.0
        answer_after = self.clock.now()
        self._outbox_clear = False
        while await leader.still_held():
            try:
                if not self._outbox_clear:
                    await self._send_unsent()
                if self.clock.now() >= answer_after:
                    await self._answer_waiting()
                    answer_backoff = 0.0
                batch = await self.platform.read(position)
                await inbox.store_batch(
                    self.framework.runtime.engine,
                    bot_key=self.bot_key,
                    agent_id=self.agent.agent_id,
                    batch=batch,
                    at=self.clock.now(),
                )
                position = batch.position or position
                read_backoff = 0.0
                if batch.messages:
                    logger.debug("%s: %d message(s) read", self.bot_key, len(batch.messages))
            except ConnectorAuthError:
                raise
            except ConnectorRateLimited as exc:
                logger.warning("%s: rate limited; waiting %gs", self.bot_key, exc.wait_seconds)
                await self.clock.sleep(exc.wait_seconds)
            except _WaitForBackend:
                answer_backoff = self._longer(answer_backoff)
                answer_after = self.clock.now() + timedelta(seconds=answer_backoff)
            except Exception as exc:
                error = as_liz_error(exc)
                if not isinstance(error, ConnectorError | StorageError):
                    raise  # a bug: the command reports it
                read_backoff = self._longer(read_backoff)
                logger.warning(
                    "%s: %s; trying again in %gs", self.bot_key, error.message, read_backoff
                )
                await self.clock.sleep(read_backoff)

    def _longer(self, backoff: float) -> float:
        return min(self.max_backoff_seconds, max(1.0, backoff * 2))

    async def _answer_waiting(self) -> None:
        """Answer the inbox's messages, oldest first; stop at a failure that passes."""
        while True:
            waiting = await inbox.to_answer(
                self.framework.runtime.engine, self.bot_key, _ANSWER_BATCH
            )
            for message in waiting:
                await self._answer(message)
                await self._send_unsent()
            if len(waiting) < _ANSWER_BATCH:
                # All there was: what comes meanwhile is read, or woken for, next cycle.
                return

    async def _send_unsent(self) -> None:
        runtime = self.framework.runtime
        await send_unsent(self.platform, runtime.engine, self.bot_key, self.clock)
        self._outbox_clear = True

    async def _answer(self, message: ConnectorInboxRecord) -> None:
        self._outbox_clear = False
        agent = self.agents.get(message.agent_id, self.agent)
        input = InputObject(
            source=self.source,
            user_id=message.user_id,
            agent_id=agent.agent_id,
            room_id=message.room_id,
            text=message.text,
        )

        def with_reply(reply: AgentReply) -> Sequence[Bound]:
            return reply_statements(message, self.platform.split(reply.text), self.clock.now())

        async with self._typing(message.chat_id):
            response = await self.framework.process(input, agent, with_reply=with_reply)
        error = response.error
        if error is None and response.reply is not None:
            if not response.stored_with_reply:  # a chain without create_memory
                async with connect(self.framework.runtime.engine) as db:
                    await db.commit(*with_reply(response.reply))
            return
        error = error or LizError("the agent answered nothing")
        async with self.framework.runtime.sessions() as session, session.begin():
            if error.status in _PASSING_STATUSES:
                await inbox.count_tried(session, message)
            elif message.attempts + 1 >= _MAX_ATTEMPTS:
                logger.error(
                    "%s: giving up on message %s: %s", self.bot_key, message.message_key, error
                )
                await inbox.give_up(session, message, self.clock.now())
                return
            else:
                await inbox.count_tried(session, message)
        logger.warning(
            "%s: message %s waits to be answered: %s",
            self.bot_key,
            message.message_key,
            error.message,
        )
        raise _WaitForBackend()

    @contextlib.asynccontextmanager
    async def _typing(self, chat_id: str) -> AsyncIterator[None]:
        """Show "typing" in the chat while the block runs, once it has run a noticeable time.

        An answer that comes at once needs no "typing" (Telegram asks bots to show an
        action only then): it would cost a call to the platform, and a share of the
        bot's rate limit, for an indicator gone before anyone could notice it. The last call is let
        finish rather than cancelled: an HTTP call cancelled half-way can leave its
        pooled connection unusable, and enough of those (one per answer) would leave
        no connection to send replies with.
        """
        done = asyncio.Event()

        async def keep_typing() -> None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), self.typing_after_seconds)
            while not done.is_set():
                try:
                    await self.platform.typing(chat_id)
                except LizError as exc:  # only a courtesy: never stops an answer
                    logger.debug("%s: could not show typing: %s", self.bot_key, exc.message)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(done.wait(), self.typing_every_seconds)

        task = asyncio.create_task(keep_typing())
        try:
            yield
        finally:
            done.set()
            await task
