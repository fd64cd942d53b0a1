"""PostgreSQL keeps each fact's embedding in the fact's row, not in the TOAST table.

pgvector's ``vector`` type is stored EXTERNAL: any vector past about 2 kB (512
dimensions and up) goes out of line, in 2 kB chunks reached through the TOAST
table's index. An exact search compares every fact of a scope (liz.facts.index.
postgres does so for small scopes), and at 1536 dimensions it read six buffers per
fact, four of them chunks. MAIN keeps the vector in the
row (one page per fact at 1536 dimensions) and moves it out only when the row
would not fit in a page otherwise, so larger embeddings still work. Rows written
from now on are stored so; existing ones move when they are next written.
Nothing changes on SQLite or on PostgreSQL without pgvector (``bytea`` column).

Revision ID: 0009_fact_embedding_inline
Revises: 0008_memory_recent_index
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op
from sqlalchemy import text

revision: str = "0009_fact_embedding_inline"
down_revision: str | None = "0008_memory_recent_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_EMBEDDING_TYPE = text(
    "SELECT format_type(atttypid, NULL) FROM pg_attribute "
    """WHERE attrelid = '"Fact"'::regclass AND attname = 'embedding'"""
)


def _is_vector() -> bool:
    bind = op.get_bind()
    return bind.dialect.name == "postgresql" and bind.execute(_EMBEDDING_TYPE).scalar() == "vector"


def upgrade() -> None:
    if _is_vector():
        op.execute('ALTER TABLE "Fact" ALTER COLUMN embedding SET STORAGE MAIN')


def downgrade() -> None:
    if _is_vector():
        op.execute('ALTER TABLE "Fact" ALTER COLUMN embedding SET STORAGE EXTERNAL')
