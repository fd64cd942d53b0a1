"""The facts tables (SQLAlchemy), mirroring ``Fact`` and ``FactHistory`` in ``schema.prisma``.

Each database's search structures are made by the migrations and liz.facts.sqlite
or liz.facts.postgres, not declared here: SQLite's FTS5 table ``FactSearch``;
PostgreSQL's ``searchVector`` column with a GIN index, one HNSW index per embedding
dimension, and the ``vectorPending`` mark of facts not yet in the graph.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import (
    REAL,
    BindParameter,
    ColumnElement,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    Text,
    cast,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.types import TypeEngine

from liz.db.tables import Base
from liz.db.types import UTCDateTime

# Names of the search structures made outside the models; `alembic check` skips them.
SEARCH_STRUCTURE_PREFIXES = (
    "FactSearch",
    "Fact_embedding_hnsw",
    "Fact_text_search",
    "searchVector",
    "vectorPending",  # PostgreSQL: a vector not yet in the HNSW graph
    "Fact_vector_pending",
)


def _embedding_type() -> TypeEngine[Any]:
    """float32 bytes on SQLite; pgvector's ``vector`` (any dimension) on PostgreSQL."""
    try:
        from pgvector.sqlalchemy import VECTOR
    except ImportError:  # the "postgres" extra is not installed: SQLite only
        return LargeBinary()

    class SentAsFloats(VECTOR):
        """pgvector's ``vector``, sent as a ``real[]`` the server casts: the driver
        sends a list of floats in binary, where pgvector's own bind writes text."""

        cache_ok = True

        def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any]:
            return _float_list

        def bind_expression(self, bindvalue: BindParameter[Any]) -> ColumnElement[Any]:
            return cast(cast(bindvalue, ARRAY(REAL)), VECTOR())

    return LargeBinary().with_variant(SentAsFloats(), "postgresql")


def _float_list(value: Any) -> list[float] | None:
    return None if value is None else np.asarray(value, dtype=np.float32).tolist()


class FactRecord(Base):
    """One fact about a user, as one agent knows it. Never deleted: retired."""

    __tablename__ = "Fact"
    __table_args__ = (
        Index(None, "agentId", "userId", "retiredAt"),
        # Answers "which embedding models does this scope use" with two index lookups.
        Index(None, "agentId", "userId", "embeddingModel", "embeddingDim"),
        Index(None, "agentId", "userId", "hash"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    agent_id: Mapped[str] = mapped_column("agentId", Text)
    user_id: Mapped[str] = mapped_column("userId", Text)
    text: Mapped[str] = mapped_column(Text)
    subject: Mapped[str] = mapped_column(Text)
    categories: Mapped[str] = mapped_column(Text)  # a JSON array of strings
    hash: Mapped[str] = mapped_column(Text)
    embedding: Mapped[Any] = mapped_column(_embedding_type())
    embedding_model: Mapped[str] = mapped_column("embeddingModel", Text)
    embedding_dim: Mapped[int] = mapped_column("embeddingDim", Integer)
    created_at: Mapped[datetime] = mapped_column("createdAt", UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column("updatedAt", UTCDateTime())
    valid_from: Mapped[datetime] = mapped_column("validFrom", UTCDateTime())
    invalid_from: Mapped[datetime | None] = mapped_column("invalidFrom", UTCDateTime())
    retired_at: Mapped[datetime | None] = mapped_column("retiredAt", UTCDateTime())
    source_memory_id: Mapped[str | None] = mapped_column("sourceMemoryId", Text)


class FactHistoryRecord(Base):
    """One change to one fact: what it said before and after, when, who and why."""

    __tablename__ = "FactHistory"
    __table_args__ = (
        Index(None, "factId"),
        Index(None, "agentId", "userId", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    fact_id: Mapped[str] = mapped_column("factId", Text, ForeignKey("Fact.id"))
    agent_id: Mapped[str] = mapped_column("agentId", Text)
    user_id: Mapped[str] = mapped_column("userId", Text)
    event: Mapped[str] = mapped_column(Text)  # ADD, UPDATE or DELETE
    old_text: Mapped[str | None] = mapped_column("oldText", Text)
    new_text: Mapped[str | None] = mapped_column("newText", Text)
    created_at: Mapped[datetime] = mapped_column("createdAt", UTCDateTime())
    actor: Mapped[str] = mapped_column(Text)  # "llm" (reconciliation), "api", "cli"
    reason: Mapped[str] = mapped_column(Text)
