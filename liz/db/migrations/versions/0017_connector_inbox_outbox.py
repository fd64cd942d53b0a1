"""The chat connectors (Telegram, Discord): each bot's cursor, inbox and outbox.

Revision ID: 0017_connector_inbox_outbox
Revises: 0016_usage_rows
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from liz.db.types import UTCDateTime

revision: str = "0017_connector_inbox_outbox"
down_revision: str | None = "0016_usage_rows"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ConnectorCursor",
        sa.Column("botKey", sa.Text(), nullable=False),
        sa.Column("position", sa.Text(), nullable=False),
        sa.Column("polledAt", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("botKey", name=op.f("ConnectorCursor_pkey")),
    )
    op.create_table(
        "ConnectorInbox",
        sa.Column("botKey", sa.Text(), nullable=False),
        sa.Column("messageKey", sa.Text(), nullable=False),
        sa.Column("sequence", sa.BigInteger(), nullable=False),
        sa.Column("agentId", sa.Text(), nullable=False),
        sa.Column("userId", sa.Text(), nullable=False),
        sa.Column("roomId", sa.Text(), nullable=False),
        sa.Column("chatId", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("replyTo", sa.Text(), nullable=True),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column(
            "receivedAt", UTCDateTime(), server_default=sa.func.current_timestamp(), nullable=False
        ),
        sa.Column("answeredAt", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("botKey", "messageKey", name=op.f("ConnectorInbox_pkey")),
    )
    op.create_index(op.f("ConnectorInbox_botKey_state_idx"), "ConnectorInbox", ["botKey", "state"])
    op.create_table(
        "ConnectorOutbox",
        sa.Column("botKey", sa.Text(), nullable=False),
        sa.Column("messageKey", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("chatId", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("replyTo", sa.Text(), nullable=True),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("attemptedAt", UTCDateTime(), nullable=True),
        sa.Column("sentId", sa.Text(), nullable=True),
        sa.Column(
            "createdAt", UTCDateTime(), server_default=sa.func.current_timestamp(), nullable=False
        ),
        sa.PrimaryKeyConstraint(
            "botKey", "messageKey", "position", name=op.f("ConnectorOutbox_pkey")
        ),
    )
    op.create_index(
        op.f("ConnectorOutbox_botKey_state_idx"), "ConnectorOutbox", ["botKey", "state"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ConnectorOutbox_botKey_state_idx"), table_name="ConnectorOutbox")
    op.drop_table("ConnectorOutbox")
    op.drop_index(op.f("ConnectorInbox_botKey_state_idx"), table_name="ConnectorInbox")
    op.drop_table("ConnectorInbox")
    op.drop_table("ConnectorCursor")
