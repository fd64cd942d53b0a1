"""What the middleware may use: settings, database sessions, the LLM, a clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from liz.background import BackgroundTasks
from liz.config import Settings
from liz.errors import LLMNotConfigured
from liz.types import Clock, SystemClock

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

    from liz.llm.client import LLMClient
    from liz.memory.store import MemoryStore


@dataclass
class Runtime:
    """Shared services, built once per process and handed to every request."""

    settings: Settings
    sessions: async_sessionmaker[AsyncSession]
    llm_client: LLMClient | None
    clock: Clock = field(default_factory=SystemClock)
    background: BackgroundTasks = field(default_factory=BackgroundTasks)
    memory: MemoryStore | None = None

    @property
    def llm(self) -> LLMClient:
        if self.llm_client is None:
            raise LLMNotConfigured()
        return self.llm_client
