"""``FactStore``: long-term facts about each user, extracted, reconciled, recalled, kept.

The store hands each operation the services it needs; the storage (liz.facts.sqlite
or liz.facts.postgres) is the one way to the database's facts. docs/facts.md shows it
in use.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.db.engine import make_read_sessionmaker
from liz.db.vector_support import require_pgvector
from liz.errors import InputError, NotFound
from liz.facts.batch import apply_batch
from liz.facts.domain import (
    Exchange,
    ExtraStatement,
    Fact,
    FactEvent,
    FactOperation,
    HistoryEntry,
    ItemResult,
    ItemStatus,
    Scope,
    WriteContext,
)
from liz.facts.extraction import Messages, extract_facts
from liz.facts.learning import learn_facts
from liz.facts.postgres import PostgresFacts
from liz.facts.queries import fact_history, facts_as_of, facts_by_id, list_facts
from liz.facts.query_vectors import QueryVectors
from liz.facts.reindex import reindex_facts
from liz.facts.settings import FactSettings
from liz.facts.shared_embedding import Seat
from liz.facts.sqlite import SqliteFacts
from liz.facts.storage import FactStorage, Query
from liz.facts.vectors import Vector
from liz.facts.writes import ScopeWrites, database_errors
from liz.llm import LLMClient
from liz.observe.memory import count_events, count_items, memory_span, records_found
from liz.prompts.templates import PromptTemplates
from liz.types import Clock, SystemClock


class FactStore:
    """Facts per (agent, user) on SQLite or PostgreSQL (pgvector); the README explains them."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        llm: LLMClient,
        *,
        engine: AsyncEngine,
        clock: Clock | None = None,
        settings: FactSettings | None = None,
        templates: PromptTemplates | None = None,
    ) -> None:
        self.sessions = sessions
        # Searches and lists read here: on SQLite they never wait for the writer.
        self.reads = make_read_sessionmaker(engine)
        self.llm = llm
        self.engine = engine
        self.clock = clock or SystemClock()
        self.settings = settings or FactSettings()
        self.templates = templates or llm.templates
        self.dialect = engine.dialect.name
        self.storage: FactStorage
        if self.dialect == "postgresql":
            self.storage = PostgresFacts(engine, sessions=sessions, clock=self.clock)
        else:
            cache = self.settings.cache_scopes
            self.storage = SqliteFacts(engine, sessions=sessions, cache_scopes=cache)
        self._writes = ScopeWrites(self.clock)
        self._query_vectors = QueryVectors(llm)  # concurrent searches share requests
        self._ready = False
        self._dimensions: set[int] = set()  # embedding sizes the index is ready for

    async def close(self) -> None:
        """Finish the background work (PostgreSQL's indexing) before the engine closes."""
        await self.storage.close()

    async def check(self) -> None:
        """Raise :class:`StorageError` if the database cannot hold facts (no pgvector)."""
        if not self._ready:
            await require_pgvector(self.engine)
            self._ready = True

    async def add(
        self,
        messages: Messages,
        agent_id: str,
        user_id: str,
        *,
        source_memory_id: str | None = None,
        agent_name: str = "the assistant",
        also: Sequence[ExtraStatement] = (),
    ) -> list[FactEvent]:
        """Extract facts from the latest exchange and reconcile them into the store.

        ``messages`` is a text (said by the user) or ``{"role", "content"}`` dicts.
        Returns the events, NOOPs included. An unusable LLM answer raises
        ``LLMOutputError`` and changes nothing. ``also`` runs in the facts' transaction
        (its own when nothing is written); a rowcount other than a statement expects
        rolls everything back with ``ExtraStatementMismatch``.
        """
        exchange = Exchange(messages, source_memory_id)
        return await self.learn([exchange], agent_id, user_id, agent_name=agent_name, also=also)

    async def learn(
        self,
        exchanges: Sequence[Exchange],
        agent_id: str,
        user_id: str,
        *,
        agent_name: str = "the assistant",
        also: Sequence[ExtraStatement] = (),
        seat: Seat | None = None,
    ) -> list[FactEvent]:
        """:meth:`add` for several exchanges of one user, oldest first: one extraction
        call, one embedding request for the new facts (``seat``'s shared one, if given:
        liz.facts.shared_embedding), at most one reconcile call, one transaction. Each
        fact added keeps the ``source_memory_id`` of the exchange it came from.
        """
        with memory_span("upsert_memory", agent_id):
            try:
                events = await self._learn(exchanges, agent_id, user_id, agent_name, also, seat)
            finally:
                if seat is not None:  # asked, or never will: the others need not wait
                    seat.leave()
        count_events(events)
        return events

    async def _learn(
        self,
        exchanges: Sequence[Exchange],
        agent_id: str,
        user_id: str,
        agent_name: str,
        also: Sequence[ExtraStatement],
        seat: Seat | None,
    ) -> list[FactEvent]:
        await self.check()
        extracted = await extract_facts(
            self.llm,
            self.templates,
            exchanges,
            agent_name=agent_name,
            today=self.clock.now().date().isoformat(),
            size=self.settings.model_size,
        )
        scope = (agent_id, user_id)
        sources = {exchange.source_memory_id for exchange in exchanges}
        # The write's own source: the message, when there is one (facts name theirs).
        source = next(iter(sources)) if len(sources) == 1 else None
        return await self._writes.run(
            scope,
            lambda: learn_facts(
                extracted,
                self._context(scope, "llm", source),
                storage=self.storage,
                reads=self.reads,
                llm=self.llm,
                templates=self.templates,
                settings=self.settings,
                also=also,
                seat=seat,
            ),
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
        floor = self.settings.search_threshold if threshold is None else threshold
        embedding: asyncio.Future[Vector] | None = None

        def embed() -> asyncio.Future[Vector]:
            nonlocal embedding
            embedding = asyncio.ensure_future(self._query_vectors.embed(query))
            return embedding

        model = self.llm.embedding_model
        with memory_span("search_memory", agent_id) as current:
            try:
                with database_errors():
                    scope = (agent_id, user_id)
                    found = await self.storage.search(
                        Query(query, scope, embed, model, limit, floor)
                    )
                    records_found(current, len(found))
                    if (vector := _arrived(embedding)) is not None:
                        await self._prepare(int(vector.size))
                    return found
            finally:
                if embedding is not None and not embedding.done():
                    embedding.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await embedding

    async def _prepare(self, dimension: int) -> None:
        # After the search, outside its session: a PostgreSQL index build takes a
        # connection of its own, and searches all waiting for one would drain the pool.
        if dimension not in self._dimensions:
            await self.storage.prepare_dimension(dimension)
            self._dimensions.add(dimension)

    async def get(self, fact_id: str, agent_id: str, user_id: str) -> Fact | None:
        """One fact of this agent and user (retired ones too), or None."""
        with database_errors():
            async with self.reads() as session:
                found = await facts_by_id(session, (agent_id, user_id), [fact_id])
        return found.get(fact_id)

    async def history(self, fact_id: str, agent_id: str, user_id: str) -> list[HistoryEntry]:
        """Every change to one fact, oldest first; :class:`NotFound` for an unknown fact."""
        with database_errors():
            async with self.reads() as session:
                entries = await fact_history(session, (agent_id, user_id), fact_id)
        if not entries:
            raise NotFound(f"no fact {fact_id!r} for agent {agent_id!r} and user {user_id!r}")
        return entries

    async def as_of(self, moment: datetime, agent_id: str, user_id: str) -> list[Fact]:
        """What the store believed about the user at ``moment``, with the text of then."""
        with database_errors():
            async with self.reads() as session:
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
        with memory_span("update_memory", agent_id):
            items = await self._writes.run(
                scope,
                lambda: apply_batch(
                    batch,
                    self._context(scope, actor),
                    storage=self.storage,
                    llm=self.llm,
                ),
            )
        count_items(items)
        return items

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
        with database_errors():
            return await reindex_facts(
                self.sessions,
                self.storage,
                self.llm,
                self.dialect,
                agent_id,
                user_id,
                everything=everything,
                progress=progress,
            )

    def _context(self, scope: Scope, actor: str, source: str | None = None) -> WriteContext:
        """Who writes to ``scope``, now, with the current embedding model."""
        model = self.llm.embedding_model
        return WriteContext(scope, self.clock.now(), actor, model, self.dialect, source)

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
        with database_errors():
            async with self.reads() as session:
                return await list_facts(
                    session,
                    (agent_id, user_id),
                    include_retired=include_retired,
                    limit=limit,
                    offset=offset,
                )


def _arrived(embedding: asyncio.Future[Vector] | None) -> Vector | None:
    """The embedding, if it was asked for and has come."""
    if embedding is None or not embedding.done() or embedding.cancelled():
        return None
    return None if embedding.exception() is not None else embedding.result()


def _one(results: list[ItemResult]) -> ItemResult:
    (result,) = results
    if result.status is ItemStatus.REFUSED:
        if "no active fact" in result.reason:
            raise NotFound(result.reason)
        raise InputError(result.reason)
    return result
