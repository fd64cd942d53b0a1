"""Tool calls waiting for a person's approval (liz.db.tool_approvals).

Revision ID: 0013_tool_approvals
Revises: 0012_fact_history_scope_index
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from liz.db.types import UTCDateTime

revision: str = "0013_tool_approvals"
down_revision: str | None = "0012_fact_history_scope_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ToolApproval",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("agentId", sa.Text(), nullable=False),
        sa.Column("userId", sa.Text(), nullable=False),
        sa.Column("roomId", sa.Text(), nullable=False),
        sa.Column("toolCallId", sa.Text(), nullable=False),
        sa.Column("toolName", sa.Text(), nullable=False),
        sa.Column("arguments", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("messages", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("createdAt", UTCDateTime(), nullable=False),
        sa.Column("expiresAt", UTCDateTime(), nullable=False),
        sa.Column("decidedAt", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("ToolApproval_pkey")),
    )
    op.create_index(
        op.f("ToolApproval_userId_createdAt_idx"), "ToolApproval", ["userId", "createdAt"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ToolApproval_userId_createdAt_idx"), table_name="ToolApproval")
    op.drop_table("ToolApproval")
