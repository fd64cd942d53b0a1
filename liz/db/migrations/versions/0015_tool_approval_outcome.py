"""A decided tool call keeps its outcome until the turn's reply is stored (liz.tools.approvals).

Revision ID: 0015_tool_approval_outcome
Revises: 0014_usage
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_tool_approval_outcome"
down_revision: str | None = "0014_usage"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("ToolApproval") as batch:
        batch.add_column(sa.Column("outcome", sa.Text(), nullable=True))
        batch.add_column(sa.Column("replyId", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ToolApproval") as batch:
        batch.drop_column("replyId")
        batch.drop_column("outcome")
