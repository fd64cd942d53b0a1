"""``MemoryStore``: long-term facts about each user, extracted, reconciled, recalled, kept.

>>> store = MemoryStore(sessions, llm, engine=engine)
>>> events = await store.add("My name is Ada and I love green tea", "ada-bot", "user-1")
>>> [fact.text for fact in await store.search("what tea?", "ada-bot", "user-1")]
['User loves green tea']
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.db.vector_support import require_pgvector
from liz.errors import InputError, NotFound, StorageError
from liz.llm import LLMClient
from liz.memory import batch as batch_rules
from liz.memory.extraction import extract_facts
from liz.memory.index_base import FactIndex, Scope
from liz.memory.index_postgres import PostgresFactIndex
from liz.memory.index_sqlite import SqliteFactIndex
from liz.memory.queries import fact_history, facts_as_of, list_facts, records_by_id, to_fact
from liz.memory.reindex import reindex_facts
from liz.memory.search import hybrid_search
from liz.memory.settings import MemorySettings
from liz.memory.types import Fact, FactEvent, FactOperation, HistoryEntry, ItemResult, ItemStatus
from liz.memory.vectors import Vector, as_unit_vector
from liz.memory.writer import reconcile_and_write
from liz.memory.writes import PlanConflict, WriteContext
from liz.templates import PromptTemplates
from liz.types import Clock, SystemClock

logger = logging.getLogger(__name__)

Messages = str | Sequence[Mapping[str, str]]
ATTEMPTS = 3  # plans made again when another writer changed a fact meanwhile


class MemoryStore:
    """Facts per (agent, user) on SQLite or PostgreSQL (pgvector); the README explains them."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        llm: LLMClient,
        *,
        engine: AsyncEngine,
        clock: Clock | None = None,
        settings: MemorySettings | None = None,
        templates: PromptTemplates | None = None,
    ) -> None:
        self.sessions = sessions
        self.llm = llm
        self.engine = engine
        self.clock = clock or SystemClock()
        self.settings = settings or MemorySettings()
        self.templates = templates or llm.templates
        self.dialect = engine.dialect.name
        self.index: FactIndex = (
            PostgresFactIndex(engine)
            if self.dialect == "postgresql"
            else SqliteFactIndex(self.settings.cache_scopes)
        )
        self._scope_locks: weakref.WeakValueDictionary[Scope, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._ready = False

    async def check(self) -> None:
        """Raise :class:`StorageError` if the database cannot hold facts (no pgvector)."""
        if not self._ready:
            await require_pgvector(self.engine)
            self._ready = True

    def scope_lock(self, scope: Scope) -> asyncio.Lock:
        """One lock per scope, so adds for one user in this process run one at a time."""
        lock = self._scope_locks.get(scope)
        if lock is None:
            lock = asyncio.Lock()
            self._scope_locks[scope] = lock
        return lock

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Unit-length embeddings of ``texts``, as stored and compared."""
        return [as_unit_vector(vector) for vector in await self.llm.embed(list(texts))]

    def write_context(self, scope: Scope, actor: str, source: str | None = None) -> WriteContext:
        """Who writes to ``scope``, now, with the current embedding model."""
        return WriteContext(
            scope, self.clock.now(), actor, self.llm.embedding_model, self.dialect, source
        )

    async def add(
        self,
        messages: Messages,
        agent_id: str,
        user_id: str,
        *,
        source_memory_id: str | None = None,
        agent_name: str = "the assistant",
    ) -> list[FactEvent]:
        """Extract facts from the latest exchange and reconcile them into the store.

        ``messages`` is a text (said by the user) or ``{"role", "content"}`` dicts.
        Returns the events applied, NOOPs included. An unusable LLM answer (after
        the client's one retry) raises ``LLMOutputError`` and changes nothing.
        """
        await self.check()
        conversation = _conversation(messages)
        if not conversation:
            return []
        extracted = await extract_facts(
            self.llm,
            self.templates,
            conversation,
            agent_name=agent_name,
            today=self.clock.now().date().isoformat(),
            size=self.settings.model_size,
        )
        if not extracted:
            return []
        scope = (agent_id, user_id)
        async with self.scope_lock(scope):
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    with _database_errors():
                        return await reconcile_and_write(self, scope, extracted, source_memory_id)
                except PlanConflict as exc:
                    logger.info("facts changed meanwhile (%s); planning again (%d)", exc, attempt)
        raise StorageError(
            f"the facts of user {user_id!r} kept changing while being reconciled; try again"
        )

    async def search(
        self,
        query: str,
        agent_id: str,
        user_id: str,
        *,
        limit: int | None = None,
        threshold: float | None = None,
    ) -> list[Fact]:
        """The user's active facts best matching ``query`` (meaning or exact words)."""
        if not query.strip():
            raise InputError("the search query is empty; give some words to search for")
        limit = self.settings.search_limit if limit is None else limit
        if limit < 1:
            raise InputError(f"limit must be at least 1, got {limit}")
        await self.check()
        (vector,) = await self.embed([query])
        with _database_errors():
            # Outside the session: a PostgreSQL index build takes a second pooled connection,
            # and searches all holding one while waiting for another would drain the pool.
            await self.index.prepare_dimension(int(vector.size))
            async with self.sessions() as session:
                return await hybrid_search(
                    session,
                    self.index,
                    (agent_id, user_id),
                    query,
                    vector,
                    model=self.llm.embedding_model,
                    limit=limit,
                    threshold=self.settings.search_threshold if threshold is None else threshold,
                )

    async def get(self, fact_id: str, agent_id: str, user_id: str) -> Fact | None:
        """One fact of this agent and user (retired ones too), or None."""
        with _database_errors():
            async with self.sessions() as session:
                found = await records_by_id(session, (agent_id, user_id), [fact_id])
        record = found.get(fact_id)
        return to_fact(record) if record is not None else None

    async def history(self, fact_id: str, agent_id: str, user_id: str) -> list[HistoryEntry]:
        """Every change to one fact, oldest first; :class:`NotFound` for an unknown fact."""
        with _database_errors():
            async with self.sessions() as session:
                entries = await fact_history(session, (agent_id, user_id), fact_id)
        if not entries:
            raise NotFound(f"no fact {fact_id!r} for agent {agent_id!r} and user {user_id!r}")
        return entries

    async def as_of(self, moment: datetime, agent_id: str, user_id: str) -> list[Fact]:
        """What the store believed about the user at ``moment``, with the text of then."""
        with _database_errors():
            async with self.sessions() as session:
                return await facts_as_of(session, (agent_id, user_id), moment)

    async def apply(
        self,
        batch: Sequence[FactOperation | Mapping[str, Any]],
        agent_id: str,
        user_id: str,
        *,
        actor: str = "api",
    ) -> list[ItemResult]:
        """Apply explicit operations; each item is applied, refused or found a duplicate.

        Valid items are written in one transaction; refused ones change nothing.
        """
        await self.check()
        scope = (agent_id, user_id)
        async with self.scope_lock(scope):
            for _ in range(ATTEMPTS):
                try:
                    with _database_errors():
                        return await batch_rules.apply_batch(self, scope, batch, actor)
                except PlanConflict as exc:
                    logger.info("facts changed during a batch (%s); checking again", exc)
        raise StorageError("the facts kept changing while the batch was applied; try again")

    async def update(
        self,
        fact_id: str,
        text: str,
        agent_id: str,
        user_id: str,
        *,
        categories: Sequence[str] | None = None,
        reason: str = "",
        actor: str = "api",
    ) -> ItemResult:
        """Change one fact's text (history kept)."""
        operation = FactOperation(
            op="update",
            id=fact_id,
            text=text,
            reason=reason,
            categories=list(categories) if categories else None,
        )
        return _one(await self.apply([operation], agent_id, user_id, actor=actor))

    async def delete(
        self,
        fact_id: str,
        agent_id: str,
        user_id: str,
        *,
        reason: str = "",
        actor: str = "api",
    ) -> ItemResult:
        """Retire one fact: it leaves search and lists, its history and text stay."""
        operation = FactOperation(op="delete", id=fact_id, reason=reason or "deleted on request")
        return _one(await self.apply([operation], agent_id, user_id, actor=actor))

    async def reindex(
        self,
        agent_id: str | None = None,
        user_id: str | None = None,
        *,
        everything: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Re-embed facts whose model or dimension differs from the current one
        (all of them with ``everything``), in one scope or all; returns how many."""
        await self.check()
        with _database_errors():
            return await reindex_facts(
                self, agent_id, user_id, everything=everything, progress=progress
            )

    # Last in the class: below this point `list` would name the method, not the type.
    async def list(
        self,
        agent_id: str,
        user_id: str,
        *,
        include_retired: bool = False,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Fact]:
        """The user's facts, newest first; retired ones only when asked."""
        if limit < 1 or offset < 0:
            raise InputError(
                f"limit must be at least 1 and offset at least 0, got {limit} and {offset}"
            )
        with _database_errors():
            async with self.sessions() as session:
                return await list_facts(
                    session,
                    (agent_id, user_id),
                    include_retired=include_retired,
                    limit=limit,
                    offset=offset,
                )


@contextmanager
def _database_errors() -> Iterator[None]:
    """Translate the database driver's failures, here and only here, into StorageError."""
    try:
        yield
    except (SQLAlchemyError, OSError) as exc:
        detail = getattr(exc, "orig", None) or exc
        raise StorageError(
            f"the facts database failed ({type(detail).__name__}: {detail}); check that it is "
            "reachable and migrated (`liz db upgrade`)"
        ) from exc


def _one(results: list[ItemResult]) -> ItemResult:
    (result,) = results
    if result.status is ItemStatus.REFUSED:
        if "no active fact" in result.reason:
            raise NotFound(result.reason)
        raise InputError(result.reason)
    return result


def _conversation(messages: Messages) -> list[dict[str, str]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}] if messages.strip() else []
    conversation = []
    for message in messages:
        content = str(message.get("content", "")).strip()
        if content:
            conversation.append({"role": str(message.get("role", "user")), "content": content})
    return conversation
