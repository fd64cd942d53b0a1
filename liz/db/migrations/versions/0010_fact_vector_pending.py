"""PostgreSQL: a fact's vector may wait to enter the HNSW graph (``"vectorPending"``).

Inserting into an HNSW graph was most of a small write's time. A small write now
marks the facts it adds or re-embeds pending, and liz.facts.pg_indexing moves them
into the graph after the commit; searches compare a scope's pending facts exactly
meanwhile. This adds the mark (false for every fact already stored: they are in
the graph), a partial index that finds a scope's pending facts, and rebuilds each
HNSW index with ``AND NOT "vectorPending"`` in its predicate. Downgrading first
rebuilds the HNSW indexes over every fact, pending ones included, so none is lost.
Nothing changes on SQLite or on PostgreSQL without pgvector.

Revision ID: 0010_fact_vector_pending
Revises: 0009_fact_embedding_inline
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op
from sqlalchemy import text

revision: str = "0010_fact_vector_pending"
down_revision: str | None = "0009_fact_embedding_inline"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_EMBEDDING_TYPE = text(
    "SELECT format_type(atttypid, NULL) FROM pg_attribute "
    """WHERE attrelid = '"Fact"'::regclass AND attname = 'embedding'"""
)
_HNSW_INDEXES = text(
    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
    "AND tablename = 'Fact' AND indexname LIKE 'Fact\\_embedding\\_hnsw\\_%'"
)


def _is_vector() -> bool:
    bind = op.get_bind()
    return bind.dialect.name == "postgresql" and bind.execute(_EMBEDDING_TYPE).scalar() == "vector"


def _rebuild_hnsw(predicate: str) -> None:
    """Each per-dimension HNSW index again, with ``predicate`` after its dimension's."""
    for name in op.get_bind().execute(_HNSW_INDEXES).scalars().all():
        dimension = int(name.rsplit("_", 1)[1])
        op.execute(f'DROP INDEX "{name}"')
        op.execute(
            f'CREATE INDEX "{name}" ON "Fact" '
            f"USING hnsw ((embedding::vector({dimension})) vector_cosine_ops) "
            f'WHERE "embeddingDim" = {dimension}{predicate}'
        )


def upgrade() -> None:
    if not _is_vector():
        return
    op.execute('ALTER TABLE "Fact" ADD COLUMN "vectorPending" boolean NOT NULL DEFAULT false')
    op.execute(
        'CREATE INDEX "Fact_vector_pending_idx" ON "Fact" ("agentId", "userId") '
        'WHERE "vectorPending"'
    )
    _rebuild_hnsw(' AND NOT "vectorPending"')


def downgrade() -> None:
    if not _is_vector():
        return
    _rebuild_hnsw("")
    op.execute('DROP INDEX "Fact_vector_pending_idx"')
    op.execute('ALTER TABLE "Fact" DROP COLUMN "vectorPending"')
