"""What the post and reply cycles share: the agent, the framework, the transport, the account."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.agent import BaseAgent
from liz.errors import LizError
from liz.pipeline import AgentFramework
from liz.twitter.settings import TwitterSettings
from liz.twitter.transport import TwitterTransport, TwitterUser
from liz.types import Clock, InputObject


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
