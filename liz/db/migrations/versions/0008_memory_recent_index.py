"""The recent conversation is read from an index, newest first, without sorting.

Every turn reads a user's newest messages with one agent. The index on
(userId, agentId) found all of the user's messages and sorted them by time, slower as
the conversation grows. The index on (userId, agentId, createdAt) hands over the
newest ones directly; it also serves every lookup the old index did, which goes.

Revision ID: 0008_memory_recent_index
Revises: 0007_learning_queue
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008_memory_recent_index"
down_revision: str | None = "0007_learning_queue"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# "IF [NOT] EXISTS": a database adopted from Liz's Prisma tables (prisma_adoption)
# gets the models' indexes of today before this revision runs.


def upgrade() -> None:
    op.execute(
        'CREATE INDEX IF NOT EXISTS "Memory_userId_agentId_createdAt_idx" '
        'ON "Memory" ("userId", "agentId", "createdAt")'
    )
    op.execute('DROP INDEX IF EXISTS "Memory_userId_agentId_idx"')


def downgrade() -> None:
    op.execute(
        'CREATE INDEX IF NOT EXISTS "Memory_userId_agentId_idx" ON "Memory" ("userId", "agentId")'
    )
    op.execute('DROP INDEX IF EXISTS "Memory_userId_agentId_createdAt_idx"')
