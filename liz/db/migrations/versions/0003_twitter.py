"""The Twitter bot's record of handled tweets: per account, what it did with each tweet.

Revision ID: 0003_twitter
Revises: 0002_facts
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from liz.db.types import UTCDateTime

revision: str = "0003_twitter"
down_revision: str | None = "0002_facts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "TwitterHandled",
        sa.Column("accountId", sa.Text(), nullable=False),
        sa.Column("tweetId", sa.Text(), nullable=False),
        sa.Column("stream", sa.Text(), nullable=False),
        sa.Column("conversationId", sa.Text(), nullable=True),
        sa.Column("decision", sa.Text(), nullable=False),
        sa.Column(
            "handledAt", UTCDateTime(), server_default=sa.func.current_timestamp(), nullable=False
        ),
        sa.PrimaryKeyConstraint("accountId", "tweetId", name=op.f("TwitterHandled_pkey")),
    )
    op.create_index(
        op.f("TwitterHandled_accountId_stream_idx"), "TwitterHandled", ["accountId", "stream"]
    )
    op.create_index(
        op.f("TwitterHandled_accountId_conversationId_idx"),
        "TwitterHandled",
        ["accountId", "conversationId"],
    )


def downgrade() -> None:
    op.drop_index(op.f("TwitterHandled_accountId_conversationId_idx"), table_name="TwitterHandled")
    op.drop_index(op.f("TwitterHandled_accountId_stream_idx"), table_name="TwitterHandled")
    op.drop_table("TwitterHandled")
