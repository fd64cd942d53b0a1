"""PostgreSQL's facts text index takes each new fact at once (no pending list).

With GIN's default ``fastupdate``, new entries wait in a pending list that every
search reads in full until a vacuum merges it. Facts arrive one at a time, where the
fast path saves little, so the index takes them directly. Nothing changes on SQLite.

Revision ID: 0006_fact_search_direct
Revises: 0005_idempotency_keys
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0006_fact_search_direct"
down_revision: str | None = "0005_idempotency_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute('ALTER INDEX "Fact_text_search_idx" SET (fastupdate = off)')
        # Merge what is pending now; from here on nothing is left pending.
        op.execute("""SELECT gin_clean_pending_list('"Fact_text_search_idx"'::regclass)""")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute('ALTER INDEX "Fact_text_search_idx" RESET (fastupdate)')
