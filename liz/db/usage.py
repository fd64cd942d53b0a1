"""The ``Usage`` table: LLM tokens, appended per unit of work, summed when read.

A turn writes its rows in the transaction that stores its reply, a learning job in the
one that writes its facts, an approval in the one that stores its reply: one row per
model and purpose the unit of work used. Rows are only ever inserted, never updated,
so two transactions never wait on the same usage row (a day's running total, upserted
by every turn and every learning job, deadlocked them on PostgreSQL). Reading sums
them. Costs are not stored: the price table turns tokens into money when usage is
read (liz.observe.prices), so a corrected price corrects the past.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Index, Integer, Text, bindparam, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from liz.db.driver import Bound, Statement
from liz.db.tables import Base
from liz.observe.usage import CallUsage


class UsageRecord(Base):
    """The tokens one unit of work (a turn, a learning job, an approval) spent on one
    model for one purpose."""

    __tablename__ = "Usage"
    __table_args__ = (
        # Today's spending of a user or an agent (liz.observe.budgets), and reports.
        Index(None, "day", "userId"),
        Index(None, "day", "agentId"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    day: Mapped[str] = mapped_column(Text)  # YYYY-MM-DD, UTC
    agent_id: Mapped[str] = mapped_column("agentId", Text)
    user_id: Mapped[str] = mapped_column("userId", Text)
    model: Mapped[str] = mapped_column(Text)
    purpose: Mapped[str] = mapped_column(Text)
    calls: Mapped[int] = mapped_column(Integer)
    # Every input token, those the provider's prompt cache served included.
    input_tokens: Mapped[int] = mapped_column("inputTokens", Integer)
    cached_input_tokens: Mapped[int] = mapped_column("cachedInputTokens", Integer)
    cache_write_tokens: Mapped[int] = mapped_column("cacheWriteTokens", Integer)
    output_tokens: Mapped[int] = mapped_column("outputTokens", Integer)


_table = UsageRecord.__table__
# One row, compiled once for each driver: the reply's transaction sends it straight to
# the driver beside the message's own statements (liz.db.driver).
_COUNTS = ("calls", "input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens")
_ADD = Statement(
    insert(UsageRecord)
    .inline()
    .values(
        {
            name: bindparam(name)
            for name in ("day", "agent_id", "user_id", "model", "purpose", *_COUNTS)
        }
    )
)


def usage_statements(
    calls: Sequence[CallUsage], *, agent_id: str, user_id: str, at: datetime
) -> list[Bound]:
    """The statements appending the calls' tokens, one row per model and purpose, for a
    transaction of the caller's (the turn's reply, a learning job, an approval)."""
    day = at.date().isoformat()
    totals: dict[tuple[str, str], list[int]] = {}
    for call in calls:
        row = totals.setdefault((call.model, call.purpose), [0, 0, 0, 0, 0])
        row[0] += 1
        row[1] += call.input_tokens
        row[2] += call.cached_input_tokens
        row[3] += call.cache_write_tokens
        row[4] += call.output_tokens
    return [
        _ADD.bind(
            day=day,
            agent_id=agent_id,
            user_id=user_id,
            model=model,
            purpose=purpose,
            **dict(zip(_COUNTS, counts, strict=True)),
        )
        for (model, purpose), counts in sorted(totals.items())
    ]


GroupBy = Literal["agent", "user", "day", "model"]
_COLUMNS = {"agent": "agentId", "user": "userId", "day": "day", "model": "model"}


@dataclass(frozen=True)
class UsageTotal:
    """Tokens of one group (``key`` is the agent, user, day or model), per model."""

    key: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0


async def usage_totals(
    session: AsyncSession,
    by: GroupBy,
    *,
    agent_id: str | None = None,
    user_id: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> list[UsageTotal]:
    """The rows summed per ``by`` and model (cost needs the model), ordered by key."""
    key = _table.c[_COLUMNS[by]]
    query: Any = select(
        key,
        _table.c.model,
        func.sum(_table.c.calls),
        func.sum(_table.c.inputTokens),
        func.sum(_table.c.outputTokens),
        func.sum(_table.c.cachedInputTokens),
        func.sum(_table.c.cacheWriteTokens),
    ).group_by(key, _table.c.model)
    if agent_id is not None:
        query = query.where(_table.c.agentId == agent_id)
    if user_id is not None:
        query = query.where(_table.c.userId == user_id)
    if since is not None:
        query = query.where(_table.c.day >= since)
    if until is not None:
        query = query.where(_table.c.day <= until)
    rows = (await session.execute(query.order_by(key, _table.c.model))).all()
    return [UsageTotal(str(r[0]), str(r[1]), *(int(value) for value in r[2:])) for r in rows]
