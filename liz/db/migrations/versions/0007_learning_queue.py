"""The queue of learning jobs: fact extraction stored with the message, done once.

Revision ID: 0007_learning_queue
Revises: 0006_fact_search_direct
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from liz.db.types import UTCDateTime

revision: str = "0007_learning_queue"
down_revision: str | None = "0006_fact_search_direct"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "LearningJob",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("memoryId", sa.Text(), nullable=False),
        sa.Column("agentId", sa.Text(), nullable=False),
        sa.Column("userId", sa.Text(), nullable=False),
        sa.Column("agentName", sa.Text(), nullable=False),
        sa.Column("replyMemoryId", sa.Text(), nullable=True),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("nextAttemptAt", UTCDateTime(), nullable=False),
        sa.Column("claimedBy", sa.Text(), nullable=True),
        sa.Column("claimedUntil", UTCDateTime(), nullable=True),
        sa.Column("lastError", sa.Text(), nullable=True),
        sa.Column("createdAt", UTCDateTime(), nullable=False),
        sa.Column("updatedAt", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("LearningJob_pkey")),
        sa.UniqueConstraint("memoryId", name=op.f("LearningJob_memoryId_key")),
    )
    op.create_index(
        op.f("LearningJob_agentId_userId_status_id_idx"),
        "LearningJob",
        ["agentId", "userId", "status", "id"],
    )
    op.create_index(
        op.f("LearningJob_status_nextAttemptAt_idx"), "LearningJob", ["status", "nextAttemptAt"]
    )


def downgrade() -> None:
    op.drop_index(op.f("LearningJob_status_nextAttemptAt_idx"), table_name="LearningJob")
    op.drop_index(op.f("LearningJob_agentId_userId_status_id_idx"), table_name="LearningJob")
    op.drop_table("LearningJob")
