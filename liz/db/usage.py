"""The ``Usage`` table: LLM tokens per agent, user, model, purpose and day.

Each turn (and each learning job) adds its calls' tokens with one upsert per row, so a
day's row holds running totals. Costs are not stored: the price table turns tokens into
money when usage is read (liz.observe.prices), so a corrected price corrects the past.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Integer, Text, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

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


async def add_usage(
    session: AsyncSession,
    calls: Sequence[CallUsage],
    *,
    agent_id: str,
    user_id: str,
    at: datetime,
) -> None:
    """Add the calls' tokens to their day's rows (one statement per model and purpose)."""
    day = at.date().isoformat()
    totals: dict[tuple[str, str], list[int]] = {}
    for call in calls:
        row = totals.setdefault((call.model, call.purpose), [0, 0, 0])
        row[0] += 1
        row[1] += call.input_tokens
        row[2] += call.output_tokens
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    table = UsageRecord.__table__
    for (model, purpose), (count, tokens_in, tokens_out) in sorted(totals.items()):
        insert = dialect.insert(table).values(
            day=day,
            agentId=agent_id,
            userId=user_id,
            model=model,
            purpose=purpose,
            calls=count,
            inputTokens=tokens_in,
            outputTokens=tokens_out,
        )
        await session.execute(
            insert.on_conflict_do_update(
                index_elements=["day", "agentId", "userId", "model", "purpose"],
                set_={
                    "calls": table.c.calls + insert.excluded.calls,
                    "inputTokens": table.c.inputTokens + insert.excluded.inputTokens,
                    "outputTokens": table.c.outputTokens + insert.excluded.outputTokens,
                },
            )
        )


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
