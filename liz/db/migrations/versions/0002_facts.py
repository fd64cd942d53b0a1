"""Long-term facts and their history; keyword search structures per database.

On PostgreSQL without pgvector the embedding column is ``bytea`` and the facts
memory refuses to start with the fix (install pgvector); everything else works.

Revision ID: 0002_facts
Revises: 0001_core
Create Date: 2026-11-29
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from liz.db.types import UTCDateTime
from liz.db.vector_support import PGVECTOR_FIX, pgvector_enabled

revision: str = "0002_facts"
down_revision: str | None = "0001_core"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

logger = logging.getLogger(__name__)


def _embedding_type(bind: sa.engine.Connection) -> sa.types.TypeEngine[Any]:
    if bind.dialect.name == "postgresql":
        if pgvector_enabled(bind):
            from pgvector.sqlalchemy import VECTOR

            return VECTOR()
        logger.warning("facts will need pgvector: %s", PGVECTOR_FIX)
    return sa.LargeBinary()


def upgrade() -> None:
    bind = op.get_bind()
    op.create_table(
        "Fact",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("agentId", sa.Text(), nullable=False),
        sa.Column("userId", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("categories", sa.Text(), nullable=False),
        sa.Column("hash", sa.Text(), nullable=False),
        sa.Column("embedding", _embedding_type(bind), nullable=False),
        sa.Column("embeddingModel", sa.Text(), nullable=False),
        sa.Column("embeddingDim", sa.Integer(), nullable=False),
        sa.Column("createdAt", UTCDateTime(), nullable=False),
        sa.Column("updatedAt", UTCDateTime(), nullable=False),
        sa.Column("validFrom", UTCDateTime(), nullable=False),
        sa.Column("invalidFrom", UTCDateTime(), nullable=True),
        sa.Column("retiredAt", UTCDateTime(), nullable=True),
        sa.Column("sourceMemoryId", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("Fact_pkey")),
    )
    op.create_index(
        op.f("Fact_agentId_userId_retiredAt_idx"), "Fact", ["agentId", "userId", "retiredAt"]
    )
    op.create_index(
        op.f("Fact_agentId_userId_embeddingModel_embeddingDim_idx"),
        "Fact",
        ["agentId", "userId", "embeddingModel", "embeddingDim"],
    )
    op.create_index(op.f("Fact_agentId_userId_hash_idx"), "Fact", ["agentId", "userId", "hash"])
    op.create_table(
        "FactHistory",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("factId", sa.Text(), nullable=False),
        sa.Column("agentId", sa.Text(), nullable=False),
        sa.Column("userId", sa.Text(), nullable=False),
        sa.Column("event", sa.Text(), nullable=False),
        sa.Column("oldText", sa.Text(), nullable=True),
        sa.Column("newText", sa.Text(), nullable=True),
        sa.Column("createdAt", UTCDateTime(), nullable=False),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["factId"], ["Fact.id"], name=op.f("FactHistory_factId_fkey")),
        sa.PrimaryKeyConstraint("id", name=op.f("FactHistory_pkey")),
    )
    op.create_index(op.f("FactHistory_factId_idx"), "FactHistory", ["factId"])
    op.create_index(op.f("FactHistory_agentId_userId_idx"), "FactHistory", ["agentId", "userId"])
    if bind.dialect.name == "sqlite":
        # Active facts only, kept in step by liz.facts.index.sqlite; rowid = hash of the id.
        op.execute(
            'CREATE VIRTUAL TABLE "FactSearch" USING fts5('
            '"factId" UNINDEXED, scope, text, tokenize = "unicode61 remove_diacritics 0")'
        )
    elif bind.dialect.name == "postgresql":
        # Stored, so ranking reads it instead of re-parsing every matching text.
        op.execute(
            'ALTER TABLE "Fact" ADD COLUMN "searchVector" tsvector '
            "GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED"
        )
        op.execute('CREATE INDEX "Fact_text_search_idx" ON "Fact" USING gin ("searchVector")')


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute('DROP TABLE IF EXISTS "FactSearch"')
    op.drop_table("FactHistory")
    op.drop_table("Fact")
