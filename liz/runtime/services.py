"""What the middleware may use: settings, the database, the LLM, a clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.config import Settings
from liz.db.engine import make_read_sessionmaker, make_sessionmaker
from liz.errors import LLMNotConfigured
from liz.learning_queue.worker import LearningWorker
from liz.observe.budgets import DailyBudgets
from liz.runtime.background import BackgroundTasks
from liz.runtime.turns_under_way import TurnsUnderWay
from liz.types import Clock, SystemClock

if TYPE_CHECKING:
    from liz.facts.store import FactStore
    from liz.llm.client import LLMClient


@dataclass
class Runtime:
    """Shared services, built once per process and handed to every request.

    Building it builds the services from its parts; none of them holds the runtime.
    """

    settings: Settings
    engine: AsyncEngine
    llm_client: LLMClient | None
    clock: Clock = field(default_factory=SystemClock)
    background: BackgroundTasks = field(default_factory=BackgroundTasks)
    facts: FactStore | None = None  # long-term facts about users; None without an LLM
    # The turns under way: learning waits for a lull in them.
    turns: TurnsUnderWay = field(init=False)
    # One session per unit of work, from the one engine of this process.
    sessions: async_sessionmaker[AsyncSession] = field(init=False)
    # Sessions that only read: on SQLite they never wait for a writer (a write fails).
    reads: async_sessionmaker[AsyncSession] = field(init=False)
    # What a user or an agent may still spend today (LIZ_*_DAILY_BUDGET_USD).
    budgets: DailyBudgets = field(init=False)
    # Learns facts from the queued messages (durable learning; started by open_runtime).
    learning: LearningWorker = field(init=False)

    def __post_init__(self) -> None:
        self.turns = TurnsUnderWay(self.clock)
        self.sessions = make_sessionmaker(self.engine)
        self.reads = make_read_sessionmaker(self.engine)
        self.budgets = DailyBudgets(
            user_usd=self.settings.liz_user_daily_budget_usd,
            agent_usd=self.settings.liz_agent_daily_budget_usd,
            reads=self.reads,
            clock=self.clock,
            price_table=self.settings.liz_price_table,
        )
        self.learning = LearningWorker(
            facts=self.facts,
            sessions=self.sessions,
            clock=self.clock,
            settings=self.settings.learning,
            turns=self.turns,
            background=self.background,
            budgets=self.budgets,
        )

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "facts" and "learning" in self.__dict__:
            self.learning.facts = value  # a store swapped in later: the worker learns into it

    @property
    def llm(self) -> LLMClient:
        if self.llm_client is None:
            raise LLMNotConfigured()
        return self.llm_client
