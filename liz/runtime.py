"""What the middleware may use: settings, the database, the LLM, a clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.background import BackgroundTasks
from liz.config import Settings
from liz.db.engine import make_read_sessionmaker, make_sessionmaker
from liz.errors import LLMNotConfigured
from liz.learning_queue.worker import LearningWorker
from liz.turns import TurnsUnderWay
from liz.types import Clock, SystemClock

if TYPE_CHECKING:
    from liz.facts.store import FactStore
    from liz.llm.client import LLMClient


@dataclass
class Runtime:
    """Shared services, built once per process and handed to every request."""

    settings: Settings
    engine: AsyncEngine
    llm_client: LLMClient | None
    clock: Clock = field(default_factory=SystemClock)
    background: BackgroundTasks = field(default_factory=BackgroundTasks)
    facts: FactStore | None = None  # long-term facts about users; None without an LLM
    # The turns under way: learning waits for a lull in them.
    turns: TurnsUnderWay = field(default_factory=TurnsUnderWay)
    # One session per unit of work, from the one engine of this process.
    sessions: async_sessionmaker[AsyncSession] = field(init=False)
    # Sessions that only read: on SQLite they never wait for a writer (a write fails).
    reads: async_sessionmaker[AsyncSession] = field(init=False)
    # Learns facts from the queued messages (durable learning; started by open_runtime).
    learning: LearningWorker = field(init=False)

    def __post_init__(self) -> None:
        self.sessions = make_sessionmaker(self.engine)
        self.reads = make_read_sessionmaker(self.engine)
        self.learning = LearningWorker(self, self.settings.learning)

    @property
    def llm(self) -> LLMClient:
        if self.llm_client is None:
            raise LLMNotConfigured()
        return self.llm_client
