"""The Twitter bot's outbox: each thread it means to post, one row per tweet, and its fate.

Revision ID: 0004_twitter_outbox
Revises: 0003_twitter
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from liz.db.types import UTCDateTime

revision: str = "0004_twitter_outbox"
down_revision: str | None = "0003_twitter"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "TwitterOutbox",
        sa.Column("accountId", sa.Text(), nullable=False),
        sa.Column("threadKey", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("replyTo", sa.Text(), nullable=True),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("attemptedAt", UTCDateTime(), nullable=True),
        sa.Column("tweetId", sa.Text(), nullable=True),
        sa.Column(
            "createdAt", UTCDateTime(), server_default=sa.func.current_timestamp(), nullable=False
        ),
        sa.PrimaryKeyConstraint(
            "accountId", "threadKey", "position", name=op.f("TwitterOutbox_pkey")
        ),
    )
    op.create_index(
        op.f("TwitterOutbox_accountId_state_idx"), "TwitterOutbox", ["accountId", "state"]
    )


def downgrade() -> None:
    op.drop_index(op.f("TwitterOutbox_accountId_state_idx"), table_name="TwitterOutbox")
    op.drop_table("TwitterOutbox")
