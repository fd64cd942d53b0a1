"""LLM token usage per agent, user, model, purpose and day (liz.db.usage), and the
traceparent of the turn that queued each learning job (liz.observe.learning).

Revision ID: 0014_usage
Revises: 0013_tool_approvals
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_usage"
down_revision: str | None = "0013_tool_approvals"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "Usage",
        sa.Column("day", sa.Text(), nullable=False),
        sa.Column("agentId", sa.Text(), nullable=False),
        sa.Column("userId", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("purpose", sa.Text(), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("inputTokens", sa.Integer(), nullable=False),
        sa.Column("outputTokens", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(
            "day", "agentId", "userId", "model", "purpose", name=op.f("Usage_pkey")
        ),
    )

    with op.batch_alter_table("LearningJob") as batch:
        batch.add_column(sa.Column("traceparent", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("LearningJob") as batch:
        batch.drop_column("traceparent")
    op.drop_table("Usage")
