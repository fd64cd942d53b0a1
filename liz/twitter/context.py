"""What the post and reply cycles share: the agent, the framework, the transport, the account."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.agent import BaseAgent
from liz.errors import LizError
from liz.pipeline import AgentFramework
from liz.twitter.errors import TwitterError
from liz.twitter.settings import TwitterSettings
from liz.twitter.store import save_tweets
from liz.twitter.transport import Tweet, TwitterTransport, TwitterUser
from liz.types import Clock, InputObject

logger = logging.getLogger(__name__)


@dataclass
class BotContext:
    """One bot's collaborators, once it knows which account it posts as."""

    agent: BaseAgent
    framework: AgentFramework
    transport: TwitterTransport
    settings: TwitterSettings
    clock: Clock
    account: TwitterUser

    @property
    def dry_run(self) -> bool:
        return self.settings.dry_run

    @property
    def sessions(self) -> async_sessionmaker[AsyncSession]:
        return self.framework.runtime.sessions

    async def ask_agent(self, input: InputObject) -> str:
        """Run ``input`` through the framework; the reply text, or the chain's error raised."""
        response = await self.framework.process(input, self.agent, dry_run=self.dry_run)
        if response.error is not None:
            raise response.error
        if response.reply is None:
            raise LizError("the agent answered nothing")
        return response.reply.text.strip()

    async def post_thread(self, texts: list[str], *, reply_to: int | None) -> list[Tweet]:
        """Post ``texts`` as a thread (each a reply to the one before) and store what was posted.

        If a later tweet fails, the ones already posted are kept and stored and the
        thread ends there: posting the whole thread again would repeat its start.
        """
        posted: list[Tweet] = []
        parent = reply_to
        try:
            for text in texts:
                tweet = await self.transport.post(text, reply_to=parent)
                posted.append(tweet)
                parent = tweet.id
        except TwitterError as exc:
            if not posted:
                raise
            logger.warning(
                "thread cut short after %d of %d tweets: %s", len(posted), len(texts), exc.message
            )
        async with self.sessions() as session, session.begin():
            await save_tweets(session, posted)
        return posted
