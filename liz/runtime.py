"""What the middleware may use: settings, database sessions, the LLM, a clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from liz.background import BackgroundTasks
from liz.config import Settings
from liz.errors import LLMNotConfigured

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

    from liz.llm.client import LLMClient
    from liz.memory.store import MemoryStore

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Runtime:
    """Shared services, built once per process and handed to every request."""

    settings: Settings
    sessions: async_sessionmaker[AsyncSession]
    llm_client: LLMClient | None
    clock: Clock = utc_now
    background: BackgroundTasks = field(default_factory=BackgroundTasks)
    memory: MemoryStore | None = None

    @property
    def llm(self) -> LLMClient:
        if self.llm_client is None:
            raise LLMNotConfigured()
        return self.llm_client
