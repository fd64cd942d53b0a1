"""The contract of facts storage, and the one search and one write both databases share.

:class:`FactStorage` is what the store asks of a database. :class:`SessionStorage`
keeps it on SQLAlchemy sessions; liz.facts.sqlite and liz.facts.postgres fill in
the parts only their database can do (keyword and vector lookups, the scope's lock,
search structures kept beside the table, the process's cache).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from sqlalchemy import TableClause, bindparam, insert, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.facts.domain import (
    Candidate,
    Change,
    ChangeLog,
    ExtraStatement,
    Fact,
    FactEvent,
    Scope,
    WriteContext,
)
from liz.facts.normalize import keyword_terms
from liz.facts.queries import FACTS, HISTORIES, HISTORY, facts_by_id
from liz.facts.search import COMMON_WORD_FACTS, Ranks, candidates_for
from liz.facts.vectors import Vector
from liz.facts.writes import Plan, Rows, planned_rows, read_snapshot, run_extra

_INSERT_HISTORY = insert(HISTORIES).returning(HISTORY.id, sort_by_parameter_order=True)


class FactStorage(Protocol):
    """What the store asks of one database's facts storage."""

    async def search(
        self,
        scope: Scope,
        query_text: str,
        query_vector: asyncio.Future[Vector],
        *,
        model: str,
        limit: int,
        threshold: float,
    ) -> list[Fact]:
        """The scope's best active facts for a query, best first, each with its similarity."""
        ...

    async def similar(
        self, scope: Scope, vectors: Sequence[Vector], *, model: str, limit: int, threshold: float
    ) -> list[Fact]:
        """Active facts of the scope at least ``threshold`` similar to one of ``vectors``."""
        ...

    async def write(
        self,
        context: WriteContext,
        plan: Plan,
        vectors: Mapping[str, Vector],
        *,
        ids: Iterable[str],
        hashes: Iterable[str],
        also: Sequence[ExtraStatement] = (),
    ) -> tuple[list[Change], list[FactEvent]]:
        """Lock the scope, read its facts with these ``ids`` and text ``hashes``, let
        ``plan`` decide, write that and then ``also``, in one transaction; the cache
        follows. ``vectors`` holds the embedding of every text added or updated."""
        ...

    def forget(self, scopes: Iterable[Scope]) -> None:
        """Drop what the process holds of these scopes (changed outside :meth:`write`)."""
        ...

    async def prepare_dimension(self, dimension: int) -> None:
        """Make ready to search vectors of ``dimension``, before any session is opened."""
        ...

    async def close(self) -> None:
        """Finish background work before the engine closes."""
        ...


class SessionStorage(ABC):
    """:class:`FactStorage` on sessions: writes on ``sessions``, reads on ``reads``
    (which on SQLite run beside the writer)."""

    facts_table: TableClause = FACTS

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], reads: async_sessionmaker[AsyncSession]
    ) -> None:
        self.sessions = sessions
        self.reads = reads

    @abstractmethod
    async def term_matches(
        self, session: AsyncSession, scope: Scope, terms: Sequence[str], *, cap: int
    ) -> dict[str, dict[str, str]]:
        """For each term in at most ``cap`` of the scope's active facts, their ids and
        texts; a term in more is left out. Reads at most ``cap + 1`` facts per term."""

    @abstractmethod
    async def vector_candidates(
        self,
        session: AsyncSession,
        scope: Scope,
        query: Vector | asyncio.Future[Vector],
        *,
        model: str,
        limit: int,
        threshold: float,
    ) -> list[Candidate]:
        """The scope's active facts most similar to ``query`` (maybe still on its way),
        at least ``threshold`` similar."""

    @abstractmethod
    async def similarities(
        self, session: AsyncSession, scope: Scope, ids: Sequence[str], query: Vector, *, model: str
    ) -> dict[str, float]:
        """The similarity to ``query`` of those of ``ids`` in the scope."""

    async def lock(self, session: AsyncSession, scope: Scope) -> None:
        """Order this write after others of the scope, in every process."""
        return None

    async def index_rows(self, session: AsyncSession, rows: Rows, log: ChangeLog) -> None:
        """Keep search structures beside the facts table in step with a write."""
        return None

    def absorb(self, scope: Scope, log: ChangeLog) -> None:
        """Take a write this process committed into the process's cache."""
        return None

    def forget(self, scopes: Iterable[Scope]) -> None:
        return None

    async def prepare_dimension(self, dimension: int) -> None:
        return None

    async def close(self) -> None:
        return None

    async def search(
        self,
        scope: Scope,
        query_text: str,
        query_vector: asyncio.Future[Vector],
        *,
        model: str,
        limit: int,
        threshold: float,
    ) -> list[Fact]:
        # Keyword hits count whatever their similarity (that is their point); they are
        # read while the query's embedding is on its way.
        candidates = candidates_for(limit)
        terms = keyword_terms(query_text)
        async with self.reads() as session:
            cap = max(COMMON_WORD_FACTS, candidates)
            ranks = Ranks.by_keywords(
                await self.term_matches(session, scope, terms, cap=cap), candidates
            )
            by_vector = await self.vector_candidates(
                session, scope, query_vector, model=model, limit=candidates, threshold=threshold
            )
            ranks.add_vector_ranking(by_vector)
            if ranks.missing:
                vector = await query_vector
                ranks.similarities.update(
                    await self.similarities(session, scope, ranks.missing, vector, model=model)
                )
            chosen = ranks.chosen(limit)
            return ranks.found(chosen, await facts_by_id(session, scope, chosen))

    async def similar(
        self, scope: Scope, vectors: Sequence[Vector], *, model: str, limit: int, threshold: float
    ) -> list[Fact]:
        ids: list[str] = []
        async with self.reads() as session:
            for vector in vectors:
                found = await self.vector_candidates(
                    session, scope, vector, model=model, limit=limit, threshold=threshold
                )
                ids.extend(fact_id for fact_id, _, _ in found if fact_id not in ids)
            facts = await facts_by_id(session, scope, ids)
        return [facts[fact_id] for fact_id in ids if fact_id in facts]

    async def write(
        self,
        context: WriteContext,
        plan: Plan,
        vectors: Mapping[str, Vector],
        *,
        ids: Iterable[str],
        hashes: Iterable[str],
        also: Sequence[ExtraStatement] = (),
    ) -> tuple[list[Change], list[FactEvent]]:
        log = ChangeLog()
        async with self.sessions() as session, session.begin():
            await self.lock(session, context.scope)
            snapshot = await read_snapshot(session, context.scope, ids, hashes)
            changes = list(plan(snapshot))
            rows, events = planned_rows(snapshot, changes, vectors, context, log)
            await self._send(session, rows, log)
            await run_extra(session, also)
        self.absorb(context.scope, log)
        return changes, events

    async def _send(self, session: AsyncSession, rows: Rows, log: ChangeLog) -> None:
        table = self.facts_table
        if rows.facts:  # before their history rows (foreign key)
            await session.execute(insert(table), rows.facts)
        for columns in sorted({tuple(sorted(row)) for row in rows.updates}):
            same: list[dict[str, Any]] = [r for r in rows.updates if tuple(sorted(r)) == columns]
            await session.execute(update(table).where(table.c.id == bindparam("target")), same)
        await self.index_rows(session, rows, log)
        if rows.history:
            log.history_ids.extend(await session.scalars(_INSERT_HISTORY, rows.history))
