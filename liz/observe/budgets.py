"""Daily budgets: what one user, or one agent, may spend on LLM calls per UTC day.

``LIZ_USER_DAILY_BUDGET_USD`` counts a user's spending over every agent, learning
included; ``LIZ_AGENT_DAILY_BUDGET_USD`` an agent's, over every user. Spending is read
from the usage table before a turn's first LLM call, so every process sharing the
database sees the same total; turns already under way when a budget runs out still
finish (a budget may be passed by what they spend). A turn over budget is refused
with :class:`BudgetExceeded` (429, until the next UTC midnight) and stores nothing;
learning over budget waits for that midnight (liz.learning_queue.worker); loops such
as the Twitter bot skip the user and say so once a day (:meth:`DailyBudgets.log_once`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.db.usage import usage_totals
from liz.errors import LizError, UsageError
from liz.observe.prices import PriceTable
from liz.observe.usage_report import priced
from liz.types import Clock

logger = logging.getLogger(__name__)

USER_BUDGET = "LIZ_USER_DAILY_BUDGET_USD"
AGENT_BUDGET = "LIZ_AGENT_DAILY_BUDGET_USD"


class BudgetExceeded(LizError):
    """A user or an agent has spent its daily budget: nothing more until it resets."""

    status = 429
    code = "budget_exceeded"

    def __init__(self, message: str, *, whose: str, resets_at: datetime, now: datetime) -> None:
        super().__init__(message)
        self.whose = whose  # "user 'ann'", "agent 'advisor'"
        self.resets_at = resets_at
        self.retry_after = float(math.ceil((resets_at - now).total_seconds()))


def next_midnight(now: datetime) -> datetime:
    """When the UTC day of ``now`` ends (``now`` is timezone-aware)."""
    return datetime.combine(now.date() + timedelta(days=1), time(), tzinfo=now.tzinfo)


@dataclass
class DailyBudgets:
    """The two budgets and what it takes to check them: read-only sessions, the clock
    (tests move it past midnight), and the price table (read at first use)."""

    user_usd: float | None
    agent_usd: float | None
    reads: async_sessionmaker[AsyncSession]
    clock: Clock
    price_table: str | None = None  # LIZ_PRICE_TABLE
    _prices: PriceTable | None = field(default=None, repr=False)
    _logged: dict[str, date] = field(default_factory=dict, repr=False)

    @property
    def enabled(self) -> bool:
        return self.user_usd is not None or self.agent_usd is not None

    @property
    def prices(self) -> PriceTable:
        if self._prices is None:
            self._prices = PriceTable.load(self.price_table)
        return self._prices

    def check_prices(self, models: Iterable[str]) -> None:
        """With a budget set, every model the app calls needs a price: a
        :class:`UsageError` naming those without one (``liz serve`` refuses to start)."""
        if not self.enabled:
            return
        unpriced = [model for model in dict.fromkeys(models) if self.prices.price(model) is None]
        if unpriced:
            names = ", ".join(repr(model) for model in unpriced)
            budgets = [
                name
                for name, usd in ((USER_BUDGET, self.user_usd), (AGENT_BUDGET, self.agent_usd))
                if usd is not None
            ]
            raise UsageError(
                f"{' and '.join(budgets)} set, but model {names} has no price: add it to a "
                'JSON file named by LIZ_PRICE_TABLE ({"models": {"<model>": {"input": <USD per '
                'million tokens>, "output": ...}}}), or unset the budget'
            )

    async def refusal(self, agent_id: str, user_id: str) -> BudgetExceeded | None:
        """The error refusing work for ``user_id`` with ``agent_id`` today, or None when
        both budgets (those set) have money left."""
        if not self.enabled:
            return None
        now = self.clock.now()
        today = now.date().isoformat()
        async with self.reads() as session:
            if self.user_usd is not None:
                spent = await self._spent(session, today, user_id=user_id)
                if spent >= self.user_usd:
                    return self._exceeded(f"user {user_id!r}", USER_BUDGET, self.user_usd, now)
            if self.agent_usd is not None:
                spent = await self._spent(session, today, agent_id=agent_id)
                if spent >= self.agent_usd:
                    return self._exceeded(f"agent {agent_id!r}", AGENT_BUDGET, self.agent_usd, now)
        return None

    async def check(self, agent_id: str, user_id: str) -> None:
        """Raise :class:`BudgetExceeded` when the work must wait for tomorrow."""
        refusal = await self.refusal(agent_id, user_id)
        if refusal is not None:
            raise refusal

    def log_once(self, key: str, refusal: BudgetExceeded, what: str) -> None:
        """Log that ``what`` waits for ``refusal``'s reset, once per UTC day per ``key``."""
        today = self.clock.now().date()
        if self._logged.get(key) == today:
            return
        self._logged[key] = today
        logger.warning("%s: %s", what, refusal.message)

    async def _spent(
        self,
        session: AsyncSession,
        day: str,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
    ) -> float:
        totals = await usage_totals(
            session, "model", agent_id=agent_id, user_id=user_id, since=day, until=day
        )
        return sum(line.cost for line in priced(totals, self.prices))

    def _exceeded(self, whose: str, setting: str, usd: float, now: datetime) -> BudgetExceeded:
        resets = next_midnight(now)
        left = resets - now
        hours, minutes = divmod(math.ceil(left.total_seconds() / 60), 60)
        return BudgetExceeded(
            f"{whose} has spent its daily budget of ${usd:g} ({setting}); it resets at "
            f"{resets:%Y-%m-%d} 00:00 UTC, in {hours} h {minutes} min",
            whose=whose,
            resets_at=resets,
            now=now,
        )
