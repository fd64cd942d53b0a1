"""PostgreSQL leaves a fact's row whole and uncompressed while it fits in a page.

Migration 0009 keeps the embedding in the row (storage MAIN), but MAIN still lets
PostgreSQL compress a row past about 2 kB (``toast_tuple_target``), and an embedding
whose numbers repeat (many zeros, as a hashed bag of words has) compresses well: an
exact search then decompressed every fact it compared, 6 kB each at 1536 dimensions.
The target is raised to a page:
a row that fits is stored as it is, and only a larger one is compressed or moved out.
Real embeddings hardly compress, so for them little changes; rows written from now
on are stored so, existing ones when they are next written.

Revision ID: 0011_fact_rows_uncompressed
Revises: 0010_fact_vector_pending
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011_fact_rows_uncompressed"
down_revision: str | None = "0010_fact_vector_pending"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The largest target PostgreSQL accepts with 8 kB pages (what fits in one).
_PAGE_TARGET = 8160


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f'ALTER TABLE "Fact" SET (toast_tuple_target = {_PAGE_TARGET})')


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute('ALTER TABLE "Fact" RESET (toast_tuple_target)')
