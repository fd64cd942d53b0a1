"""Liz's core tables: Memory and Tweet; pgvector on PostgreSQL when the server has it.

Revision ID: 0001_core
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from liz.db.types import UTCDateTime
from liz.db.vector_support import enable_pgvector

revision: str = "0001_core"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    enable_pgvector(op.get_bind())
    op.create_table(
        "Memory",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("userId", sa.Text(), nullable=False),
        sa.Column("agentId", sa.Text(), nullable=False),
        sa.Column("roomId", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("generator", sa.Text(), nullable=False),
        sa.Column(
            "createdAt", UTCDateTime(), server_default=sa.func.current_timestamp(), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("Memory_pkey")),
    )
    op.create_index(op.f("Memory_roomId_idx"), "Memory", ["roomId"])
    op.create_index(op.f("Memory_userId_agentId_idx"), "Memory", ["userId", "agentId"])
    op.create_index(op.f("Memory_type_idx"), "Memory", ["type"])
    op.create_table(
        "Tweet",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("userId", sa.Text(), nullable=False),
        sa.Column("username", sa.Text(), nullable=False),
        sa.Column("conversationId", sa.Text(), nullable=True),
        sa.Column("inReplyToId", sa.Text(), nullable=True),
        sa.Column(
            "createdAt", UTCDateTime(), server_default=sa.func.current_timestamp(), nullable=False
        ),
        sa.Column("permanentUrl", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("Tweet_pkey")),
    )
    op.create_index(op.f("Tweet_userId_idx"), "Tweet", ["userId"])
    op.create_index(op.f("Tweet_conversationId_idx"), "Tweet", ["conversationId"])


def downgrade() -> None:
    # The vector extension stays: other tables may use it, and dropping it needs a superuser.
    op.drop_table("Tweet")
    op.drop_table("Memory")
