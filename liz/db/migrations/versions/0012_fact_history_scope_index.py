"""A scope's newest history row is read from an index, without reading the others.

Every search on PostgreSQL reads the scope's newest ``FactHistory`` id: the mark that
tells the facts held in the process (liz.facts.index.pg_cache) whether they are
current, and, when not, which changed. The index on (agentId, userId) found every
history row of the scope to take the highest; the index on (agentId, userId, id)
hands it over at once, and the rows after a mark in order. It also serves every
lookup the old index did, which goes.

Revision ID: 0012_fact_history_scope_index
Revises: 0011_fact_rows_uncompressed
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0012_fact_history_scope_index"
down_revision: str | None = "0011_fact_rows_uncompressed"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        'CREATE INDEX IF NOT EXISTS "FactHistory_agentId_userId_id_idx" '
        'ON "FactHistory" ("agentId", "userId", id)'
    )
    op.execute('DROP INDEX IF EXISTS "FactHistory_agentId_userId_idx"')


def downgrade() -> None:
    op.execute(
        'CREATE INDEX IF NOT EXISTS "FactHistory_agentId_userId_idx" '
        'ON "FactHistory" ("agentId", "userId")'
    )
    op.execute('DROP INDEX IF EXISTS "FactHistory_agentId_userId_id_idx"')
