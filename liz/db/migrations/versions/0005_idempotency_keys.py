"""Idempotency keys: the first outcome of a request, replayed to its retries.

Revision ID: 0005_idempotency_keys
Revises: 0004_twitter_outbox
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from liz.db.types import UTCDateTime

revision: str = "0005_idempotency_keys"
down_revision: str | None = "0004_twitter_outbox"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "IdempotencyKey",
        sa.Column("userId", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("requestHash", sa.Text(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("response", sa.Text(), nullable=True),
        sa.Column("createdAt", UTCDateTime(), nullable=False),
        sa.Column("completedAt", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("userId", "key", name=op.f("IdempotencyKey_pkey")),
    )
    op.create_index(op.f("IdempotencyKey_createdAt_idx"), "IdempotencyKey", ["createdAt"])


def downgrade() -> None:
    op.drop_index(op.f("IdempotencyKey_createdAt_idx"), table_name="IdempotencyKey")
    op.drop_table("IdempotencyKey")
