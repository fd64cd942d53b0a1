"""The ``Usage`` table: LLM tokens per agent, user, model, purpose and day.

Each turn adds its calls' tokens in the transaction that stores its reply, a learning
job after its facts are written, with one upsert per row: a day's row holds running
totals. Costs are not stored: the price table turns tokens into money when usage is
read (liz.observe.prices), so a corrected price corrects the past.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Integer, Text, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from liz.db.driver import Bound, Statement
from liz.db.tables import Base
from liz.observe.usage import CallUsage


class UsageRecord(Base):
    """One agent, user, model, purpose and day's token totals."""

    __tablename__ = "Usage"

    day: Mapped[str] = mapped_column(Text, primary_key=True)  # YYYY-MM-DD, UTC
    agent_id: Mapped[str] = mapped_column("agentId", Text, primary_key=True)
    user_id: Mapped[str] = mapped_column("userId", Text, primary_key=True)
    model: Mapped[str] = mapped_column(Text, primary_key=True)
    purpose: Mapped[str] = mapped_column(Text, primary_key=True)
    calls: Mapped[int] = mapped_column(Integer)
    input_tokens: Mapped[int] = mapped_column("inputTokens", Integer)
    output_tokens: Mapped[int] = mapped_column("outputTokens", Integer)


# The same SQL on SQLite and PostgreSQL: an upsert adding to the day's totals.
_ADD = Statement.of(
    'INSERT INTO "Usage" ("day", "agentId", "userId", "model", "purpose", "calls", '
    '"inputTokens", "outputTokens") VALUES ({}, {}, {}, {}, {}, {}, {}, {}) '
    'ON CONFLICT ("day", "agentId", "userId", "model", "purpose") DO UPDATE SET '
    '"calls" = "Usage"."calls" + excluded."calls", '
    '"inputTokens" = "Usage"."inputTokens" + excluded."inputTokens", '
    '"outputTokens" = "Usage"."outputTokens" + excluded."outputTokens"'
)


def usage_statements(
    calls: Sequence[CallUsage], *, agent_id: str, user_id: str, at: datetime
) -> list[Bound]:
    """The statements adding the calls' tokens to their day's rows, one per model and
    purpose, for a transaction of the caller's (the turn's reply, a learning job)."""
    day = at.date().isoformat()
    totals: dict[tuple[str, str], list[int]] = {}
    for call in calls:
        row = totals.setdefault((call.model, call.purpose), [0, 0, 0])
        row[0] += 1
        row[1] += call.input_tokens
        row[2] += call.output_tokens
    return [
        _ADD.bind(day, agent_id, user_id, model, purpose, count, tokens_in, tokens_out)
        for (model, purpose), (count, tokens_in, tokens_out) in sorted(totals.items())
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


async def usage_totals(
    session: AsyncSession,
    by: GroupBy,
    *,
    agent_id: str | None = None,
    user_id: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> list[UsageTotal]:
    """Totals grouped by ``by`` and model (cost needs the model), ordered by key."""
    table = UsageRecord.__table__
    key = table.c[_COLUMNS[by]]
    query: Any = select(
        key,
        table.c.model,
        func.sum(table.c.calls),
        func.sum(table.c.inputTokens),
        func.sum(table.c.outputTokens),
    ).group_by(key, table.c.model)
    if agent_id is not None:
        query = query.where(table.c.agentId == agent_id)
    if user_id is not None:
        query = query.where(table.c.userId == user_id)
    if since is not None:
        query = query.where(table.c.day >= since)
    if until is not None:
        query = query.where(table.c.day <= until)
    rows = (await session.execute(query.order_by(key, table.c.model))).all()
    return [UsageTotal(str(r[0]), str(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in rows]
