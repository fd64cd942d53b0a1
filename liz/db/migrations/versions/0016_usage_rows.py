"""Usage as rows that are only appended (liz.db.usage), with cached input tokens.

A day's totals per agent, user, model and purpose become one row each, their cached
and cache-written tokens 0 (they were not counted before); new rows are appended per
unit of work and summed when read, so no two transactions update the same row.

Revision ID: 0016_usage_rows
Revises: 0015_tool_approval_outcome
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_usage_rows"
down_revision: str | None = "0015_tool_approval_outcome"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KEY = ("day", "agentId", "userId", "model", "purpose")
_TOKENS = ("inputTokens", "cachedInputTokens", "cacheWriteTokens", "outputTokens")


def _set_aside(name: str) -> None:
    """Rename the ``Usage`` table to ``name``, freeing its key's name (PostgreSQL keeps
    constraint names per schema, SQLite per table)."""
    op.rename_table("Usage", name)
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint("Usage_pkey", name, type_="primary")


def upgrade() -> None:
    _set_aside("UsageDaily")
    op.create_table(
        "Usage",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        *(sa.Column(name, sa.Text(), nullable=False) for name in _KEY),
        sa.Column("calls", sa.Integer(), nullable=False),
        *(sa.Column(name, sa.Integer(), nullable=False) for name in _TOKENS),
        sa.PrimaryKeyConstraint("id", name=op.f("Usage_pkey")),
    )
    op.create_index(op.f("Usage_day_userId_idx"), "Usage", ["day", "userId"])
    op.create_index(op.f("Usage_day_agentId_idx"), "Usage", ["day", "agentId"])
    daily = sa.table(
        "UsageDaily", *(sa.column(name) for name in (*_KEY, "calls", "inputTokens", "outputTokens"))
    )
    rows = sa.table("Usage", *(sa.column(name) for name in (*_KEY, "calls", *_TOKENS)))
    kept = sa.select(
        *(daily.c[name] for name in (*_KEY, "calls", "inputTokens")),
        sa.literal(0),
        sa.literal(0),
        daily.c.outputTokens,
    )
    op.execute(rows.insert().from_select([*_KEY, "calls", *_TOKENS], kept))
    op.drop_table("UsageDaily")


def downgrade() -> None:
    _set_aside("UsageRows")
    op.create_table(
        "Usage",
        *(sa.Column(name, sa.Text(), nullable=False) for name in _KEY),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("inputTokens", sa.Integer(), nullable=False),
        sa.Column("outputTokens", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(*_KEY, name=op.f("Usage_pkey")),
    )
    rows = sa.table("UsageRows", *(sa.column(name) for name in (*_KEY, "calls", *_TOKENS)))
    daily = sa.table(
        "Usage", *(sa.column(name) for name in (*_KEY, "calls", "inputTokens", "outputTokens"))
    )
    key = [rows.c[name] for name in _KEY]
    summed = sa.select(
        *key,
        sa.func.sum(rows.c.calls),
        sa.func.sum(rows.c.inputTokens),
        sa.func.sum(rows.c.outputTokens),
    ).group_by(*key)
    op.execute(daily.insert().from_select([*_KEY, "calls", "inputTokens", "outputTokens"], summed))
    op.drop_table("UsageRows")
