"""Committing a write plan: one transaction, a history row for each change, nothing
overwritten unseen.

A write reads what its plan touches under the scope's lock (liz.facts.snapshot),
then writes it with a fixed handful of statements whatever the plan's size
(:func:`write_changes`): one insert per table, one update per changed column set.
:func:`commit_changes` does both for a plan made earlier: a fact retired or changed
since raises :class:`PlanConflict` (the caller plans again) rather than applying a
decision made on stale text.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.facts.domain import Change, Event, FactEvent, PlanConflict, WriteContext
from liz.facts.index.protocol import ChangeLog, FactIndex, IndexedFact
from liz.facts.normalize import fact_hash
from liz.facts.pg_commit import commit_on_postgres
from liz.facts.snapshot import Snapshot, Stored, read_snapshot
from liz.facts.sqlite_commit import commit_on_sqlite
from liz.facts.sqlite_thread import supports
from liz.facts.tables import FactHistoryRecord, FactRecord
from liz.facts.vectors import Vector, for_storage

Plan = Callable[[Snapshot], Sequence[Change]]
# On PostgreSQL, a write of at most this many facts (ids and texts it reads) goes in a
# few statements on the driver's own connection, new facts and their history rows in
# one (a bind parameter a column a row); a larger one keeps the session's executemany.
ONE_STATEMENT_FACTS = 100


async def commit(
    sessions: async_sessionmaker[AsyncSession],
    index: FactIndex,
    context: WriteContext,
    plan: Plan,
    vectors: Mapping[str, Vector],
    *,
    ids: Iterable[str],
    hashes: Iterable[str],
) -> tuple[list[Change], list[FactEvent]]:
    """One write, in one transaction: lock the scope, read its facts with these ``ids``
    and text ``hashes``, let ``plan`` decide the changes from them, write those; then
    tell ``index``. Returns the changes and what was done for each, in order.
    ``vectors`` holds the embedding of every text added or updated."""
    log = ChangeLog()
    ids, hashes = list(ids), list(hashes)
    engine = sessions.kw.get("bind")

    def decide(snapshot: Snapshot) -> tuple[list[Change], Rows, list[FactEvent]]:
        changes = list(plan(snapshot))
        return changes, *planned_rows(snapshot, changes, vectors, context, log)

    # A caller's on_commit needs a session in the transaction: the last path.
    if context.on_commit is None and isinstance(engine, AsyncEngine) and supports(engine):
        # The whole transaction in one call on SQLite's thread (liz.facts.sqlite_commit).
        changes, events = await commit_on_sqlite(engine, context.scope, ids, hashes, decide, log)
    elif (
        context.on_commit is None
        and isinstance(engine, AsyncEngine)
        and engine.dialect.name == "postgresql"
        and len(ids) + len(hashes) <= ONE_STATEMENT_FACTS
    ):
        # A small write on the driver's own connection (liz.facts.pg_commit); a bulk
        # one keeps the session, whose executemany sends any number of rows.
        changes, events = await commit_on_postgres(engine, context.scope, ids, hashes, decide, log)
    else:
        async with sessions() as session, session.begin():
            snapshot = await read_snapshot(session, context.scope, context.dialect, ids, hashes)
            changes = list(plan(snapshot))
            events = await write_changes(session, index, snapshot, changes, vectors, context, log)
            if context.on_commit is not None:
                await context.on_commit(session)
    index.absorb(context.scope, log)
    return changes, events


async def commit_changes(
    sessions: async_sessionmaker[AsyncSession],
    index: FactIndex,
    changes: Sequence[Change],
    vectors: Mapping[str, Vector],
    context: WriteContext,
) -> list[FactEvent]:
    """Write a plan made before this transaction; return what was done, in order.

    Raises :class:`PlanConflict` when a target changed since the plan was made.
    """

    def still_valid(snapshot: Snapshot) -> Sequence[Change]:
        for change in changes:
            if change.event in (Event.UPDATE, Event.DELETE):
                target = snapshot.targets.get(change.fact_id or "")
                if target is None or target.retired:
                    raise PlanConflict(f"fact {change.fact_id} was retired meanwhile")
                expected = change.expected_updated_at
                if expected and target.updated_at != expected:
                    raise PlanConflict(f"fact {change.fact_id} was changed meanwhile")
        return changes

    _, events = await commit(
        sessions,
        index,
        context,
        still_valid,
        vectors,
        ids=[c.fact_id for c in changes if c.fact_id and c.event is not Event.NOOP],
        hashes=[fact_hash(c.text) for c in changes if c.event in (Event.ADD, Event.UPDATE)],
    )
    return events


# Built once, not for every write.
_INSERT_FACTS = insert(FactRecord)
_UPDATE_FACTS = update(FactRecord)
_INSERT_HISTORY = insert(FactHistoryRecord).returning(
    FactHistoryRecord.id, sort_by_parameter_order=True
)


@dataclass
class Rows:
    """The rows one write inserts and updates, gathered before any is sent; keys are
    the models' attribute names."""

    context: WriteContext
    facts: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)

    def record(
        self, fact_id: str, event: Event, old: str | None, new: str | None, why: str
    ) -> None:
        self.history.append(
            {
                "fact_id": fact_id,
                "agent_id": self.context.scope[0],
                "user_id": self.context.scope[1],
                "event": event.value,
                "old_text": old,
                "new_text": new,
                "created_at": self.context.now,
                "actor": self.context.actor,
                "reason": why,
            }
        )


async def write_changes(
    session: AsyncSession,
    index: FactIndex,
    snapshot: Snapshot,
    changes: Sequence[Change],
    vectors: Mapping[str, Vector],
    context: WriteContext,
    log: ChangeLog,
) -> list[FactEvent]:
    """Write ``changes`` (checked against ``snapshot``) in the session's transaction;
    return what was done, in order. ``log`` collects what changed; after the commit,
    pass it to ``index.absorb``."""
    rows, events = planned_rows(snapshot, changes, vectors, context, log)
    await _send(session, index, rows, log)
    return events


def planned_rows(
    snapshot: Snapshot,
    changes: Sequence[Change],
    vectors: Mapping[str, Vector],
    context: WriteContext,
    log: ChangeLog,
) -> tuple[Rows, list[FactEvent]]:
    """The rows that write ``changes`` (checked against ``snapshot``) and what is done
    for each change, in order; ``log`` takes what changes. No I/O."""
    retiring = {c.fact_id for c in changes if c.event is Event.DELETE}
    existing = {d: s for d, s in snapshot.by_hash.items() if s.id not in retiring}
    rows = Rows(context)
    events: list[FactEvent] = []
    for change in changes:
        if change.event is Event.NOOP:
            events.append(
                FactEvent(Event.NOOP, change.fact_id or "", change.text, reason=change.reason)
            )
            continue
        if change.event is Event.DELETE:
            events.append(_retire(snapshot.targets[change.fact_id or ""], change, rows, log))
            continue
        digest = fact_hash(change.text)
        duplicate = existing.get(digest)
        if duplicate is not None and duplicate.id != change.fact_id:
            reason = "exact duplicate of a stored fact"
            events.append(FactEvent(Event.NOOP, duplicate.id, duplicate.text, reason=reason))
            continue
        if change.event is Event.UPDATE:
            target = snapshot.targets[change.fact_id or ""]
            if target.hash == digest:
                events.append(FactEvent(Event.NOOP, target.id, target.text, reason="unchanged"))
                continue
            fact_id = target.id
            if existing.get(target.hash) == target:
                del existing[target.hash]  # the fact no longer says its old text
            rows.updates.append(_updated(target, change, vectors[change.text], context))
            rows.record(fact_id, Event.UPDATE, target.text, change.text, change.reason)
            events.append(FactEvent(Event.UPDATE, fact_id, change.text, target.text, change.reason))
        else:
            fact_id = new_fact_id()
            rows.facts.append(_inserted(fact_id, change, vectors[change.text], context))
            rows.record(fact_id, Event.ADD, None, change.text, change.reason)
            events.append(FactEvent(Event.ADD, fact_id, change.text, reason=change.reason))
        vector = vectors[change.text]
        log.added.append(
            IndexedFact(
                fact_id,
                context.scope[0],
                context.scope[1],
                change.text,
                digest,
                vector,
                context.model,
                int(vector.size),
            )
        )
        existing[digest] = Stored(fact_id, change.text, digest, change.subject, False, None)
    return rows, events


async def _send(session: AsyncSession, index: FactIndex, rows: Rows, log: ChangeLog) -> None:
    together = rows.context.dialect == "postgresql" and len(rows.facts) <= ONE_STATEMENT_FACTS
    if rows.facts and not together:  # before their history rows (foreign key)
        await session.execute(_INSERT_FACTS, rows.facts)
    for columns in {tuple(sorted(row)) for row in rows.updates}:
        await session.execute(
            _UPDATE_FACTS, [row for row in rows.updates if tuple(sorted(row)) == columns]
        )
    inserted = {row["id"] for row in rows.facts}
    replaced = [fact.id for fact in log.added if fact.id not in inserted]
    if log.removed or replaced:
        await index.facts_removed(session, [*log.removed, *replaced])
    if log.added:
        await index.facts_added(session, log.added)
    if rows.facts and together:
        # One round trip: the facts' insert rides along as a data-modifying CTE, and
        # PostgreSQL checks the history rows' foreign key at the end of the statement.
        added = insert(FactRecord).values(rows.facts).cte("added")
        with_facts = insert(FactHistoryRecord).values(rows.history).add_cte(added)
        ids = await session.scalars(with_facts.returning(FactHistoryRecord.id))
        log.history_ids.extend(ids)
    elif rows.history:
        ids = await session.scalars(_INSERT_HISTORY, rows.history)
        log.history_ids.extend(ids)


def new_fact_id() -> str:
    """A new fact's id: a UUID laid out as version 7 (RFC 9562), the time in
    milliseconds first and 74 random bits after it.

    Random (version 4) ids put each new fact in a random leaf of every index keyed by
    id (the facts' primary key, the history rows' ``factId``): at 100k facts those
    leaves are rarely in PostgreSQL's buffers, and the first change to each after a
    checkpoint writes the whole 8 kB page to the WAL, which the commit then waits to
    flush. Ids that grow with time all go to the same few rightmost leaves; a store of
    one fact wrote half the WAL (16 kB to 8 kB at 100k facts of 1536 dimensions).
    Still 122 bits of uniqueness, as opaque as before; the time they carry is the
    fact's ``createdAt``, which the store shows anyway.
    """
    millis = time.time_ns() // 1_000_000 & (1 << 48) - 1
    random = int.from_bytes(os.urandom(10), "big")
    value = millis << 80 | 0x7 << 76 | (random >> 62 & 0xFFF) << 64 | 0b10 << 62
    return str(uuid.UUID(int=value | random & (1 << 62) - 1))


def _inserted(
    fact_id: str, change: Change, vector: Vector, context: WriteContext
) -> dict[str, Any]:
    return {
        "id": fact_id,
        "agent_id": context.scope[0],
        "user_id": context.scope[1],
        "text": change.text,
        "subject": change.subject,
        "categories": json.dumps(list(change.categories)),
        "hash": fact_hash(change.text),
        "embedding": for_storage(vector, context.dialect),
        "embedding_model": context.model,
        "embedding_dim": int(vector.size),
        "created_at": context.now,
        "updated_at": context.now,
        "valid_from": context.now,
        "invalid_from": None,
        "retired_at": None,
        "source_memory_id": change.source_memory_id or context.source_memory_id,
    }


def _updated(
    target: Stored, change: Change, vector: Vector, context: WriteContext
) -> dict[str, Any]:
    row = {
        "id": target.id,
        "text": change.text,
        "hash": fact_hash(change.text),
        "embedding": for_storage(vector, context.dialect),
        "embedding_model": context.model,
        "embedding_dim": int(vector.size),
        "updated_at": context.now,
    }
    if change.categories:
        row["categories"] = json.dumps(list(change.categories))
    return row


def _retire(target: Stored, change: Change, rows: Rows, log: ChangeLog) -> FactEvent:
    now = rows.context.now
    rows.updates.append(
        {"id": target.id, "retired_at": now, "invalid_from": now, "updated_at": now}
    )
    rows.record(target.id, Event.DELETE, target.text, None, change.reason)
    log.removed.append(target.id)
    return FactEvent(Event.DELETE, target.id, target.text, target.text, change.reason)
