"""The contract of facts storage, and the one search and one write both databases share.

:class:`FactStorage` is what the store asks of a database. :class:`SessionStorage`
keeps it on SQLAlchemy sessions; liz.facts.sqlite and liz.facts.postgres fill in
the parts only their database can do (keyword and vector lookups, the scope's lock,
search structures kept beside the table, the process's cache).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import TableClause, bindparam, insert, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.db.engine import make_read_sessionmaker, make_sessionmaker
from liz.facts.domain import Candidate, Change, ChangeLog, Fact, FactEvent, Scope
from liz.facts.normalize import keyword_terms
from liz.facts.queries import FACTS, HISTORIES, HISTORY, facts_by_id
from liz.facts.search import COMMON_WORD_FACTS, Ranks, candidates_for
from liz.facts.vectors import Vector
from liz.facts.writes import Rows, Write, planned_rows, read_snapshot, run_extra

HOLDING_SCOPES = 4096
_INSERT_HISTORY = insert(HISTORIES).returning(HISTORY.id, sort_by_parameter_order=True)


@dataclass(frozen=True)
class Nearest:
    """A vector lookup: the scope's ``limit`` active facts most similar to ``vector``,
    at least ``threshold`` similar."""

    scope: Scope
    vector: Vector
    model: str
    limit: int
    threshold: float


@dataclass(frozen=True)
class Query:
    """A search for ``text``: the scope's ``limit`` best facts. ``embed`` starts the
    text's embedding; it is called only when the scope holds an active fact."""

    text: str
    scope: Scope
    embed: Callable[[], asyncio.Future[Vector]]
    model: str
    limit: int
    threshold: float


class FactStorage(Protocol):
    """What the store asks of one database's facts storage."""

    async def search(self, query: Query) -> list[Fact]:
        """The scope's best active facts for ``query``, best first, each with its
        similarity; none, and no embedding asked for, when the scope holds none."""
        ...

    async def similar(self, lookups: Sequence[Nearest]) -> list[Fact]:
        """Active facts found by any of ``lookups``, each once."""
        ...

    async def write(self, write: Write) -> tuple[list[Change], list[FactEvent]]:
        """Lock the scope, read its facts the write names, let its plan decide, write
        that and then its extra statements, in one transaction; the cache follows."""
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


def term_hits(
    rows: Iterable[Sequence[Any]], terms: Sequence[str], cap: int
) -> tuple[bool, dict[str, dict[str, str]]]:
    """A keyword statement's rows of (term number, fact id, text), the number -1 when
    the scope holds an active fact, as :meth:`SessionStorage.term_matches` answers."""
    active = False
    found: dict[str, dict[str, str]] = {term: {} for term in terms}
    for number, fact_id, fact_text in rows:
        if number < 0:
            active = True
        else:
            found[terms[number]][fact_id] = fact_text
    return active, {term: hits for term, hits in found.items() if len(hits) <= cap}


class SessionStorage(ABC):
    """:class:`FactStorage` on sessions: writes on ``sessions`` (the engine's own when
    none are given), reads on ``reads`` (which on SQLite run beside the writer)."""

    facts_table: TableClause = FACTS

    def __init__(
        self, engine: AsyncEngine, sessions: async_sessionmaker[AsyncSession] | None
    ) -> None:
        self.sessions = sessions or make_sessionmaker(engine)
        self.reads = make_read_sessionmaker(engine)
        self._holding: OrderedDict[Scope, None] = OrderedDict()  # scopes seen with facts

    def _seen(self, scope: Scope, active: bool) -> None:
        if not active:
            self._holding.pop(scope, None)
            return
        self._holding[scope] = None
        self._holding.move_to_end(scope)
        if len(self._holding) > HOLDING_SCOPES:
            self._holding.popitem(last=False)

    @abstractmethod
    async def term_matches(
        self, session: AsyncSession, scope: Scope, terms: Sequence[str], *, cap: int
    ) -> tuple[bool, dict[str, dict[str, str]]]:
        """Whether the scope holds an active fact, and for each term in at most ``cap``
        of them their ids and texts (a term in more is left out), in one statement."""

    @abstractmethod
    async def vector_candidates(self, session: AsyncSession, wanted: Nearest) -> list[Candidate]:
        """The facts ``wanted`` asks for, with their similarity and text hash."""

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

    async def search(self, query: Query) -> list[Fact]:
        # Keyword hits count whatever their similarity (that is their point).
        scope, candidates = query.scope, candidates_for(query.limit)
        terms = keyword_terms(query.text)
        # A scope seen holding facts asks for the embedding beside its first read.
        embedding = query.embed() if scope in self._holding else None
        async with self.reads() as session:
            cap = max(COMMON_WORD_FACTS, candidates)
            active, matches = await self.term_matches(session, scope, terms, cap=cap)
        self._seen(scope, active)
        if not active:
            return []  # the store cancels an embedding asked for
        # Awaited with no connection held: a slow embeddings endpoint keeps none busy.
        vector = await (embedding or query.embed())
        ranks = Ranks.by_keywords(matches, candidates)
        async with self.reads() as session:
            wider = Nearest(scope, vector, query.model, candidates, query.threshold)
            ranks.add_vector_ranking(await self.vector_candidates(session, wider))
            if missing := ranks.missing:
                found = await self.similarities(session, scope, missing, vector, model=query.model)
                ranks.similarities.update(found)
            chosen = ranks.chosen(query.limit)
            return ranks.found(chosen, await facts_by_id(session, scope, chosen))

    async def similar(self, lookups: Sequence[Nearest]) -> list[Fact]:
        ids: list[str] = []
        if not lookups:
            return []
        async with self.reads() as session:
            for wanted in lookups:
                found = await self.vector_candidates(session, wanted)
                ids.extend(fact_id for fact_id, _, _ in found if fact_id not in ids)
            facts = await facts_by_id(session, lookups[0].scope, ids)
        return [facts[fact_id] for fact_id in ids if fact_id in facts]

    async def write(self, write: Write) -> tuple[list[Change], list[FactEvent]]:
        log = ChangeLog()
        scope = write.context.scope
        async with self.sessions() as session, session.begin():
            await self.lock(session, scope)
            snapshot = await read_snapshot(session, scope, write.ids, write.hashes)
            changes = list(write.plan(snapshot))
            rows, events = planned_rows(snapshot, changes, write.vectors, write.context, log)
            await self._send(session, rows, log)
            await run_extra(session, write.also)
        self.absorb(scope, log)
        if log.added:
            self._seen(scope, True)
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
