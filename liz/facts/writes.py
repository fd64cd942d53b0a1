"""Turning a write plan into rows, and what every write shares on either database.

A write reads what its plan touches under the scope's lock (:func:`read_snapshot`),
lets the plan decide, then sends a fixed handful of statements whatever the plan's
size (one insert per table, one update per changed column set), then the caller's
extra statements, all in one transaction. Writes to one scope run one at a time in
this process (:class:`ScopeWrites`); a :class:`PlanConflict` makes them plan again.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import bindparam, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession
from tenacity import wait_none

from liz.errors import StorageError
from liz.facts.domain import (
    Change,
    ChangeLog,
    Event,
    ExtraStatement,
    ExtraStatementMismatch,
    FactEvent,
    IndexedFact,
    PlanConflict,
    Scope,
    Snapshot,
    Stored,
    WriteContext,
)
from liz.facts.normalize import fact_hash
from liz.facts.queries import FACT, scope_values
from liz.facts.vectors import Vector, for_storage
from liz.runtime.retry import retrying
from liz.types import Clock

T = TypeVar("T")
Plan = Callable[[Snapshot], Sequence[Change]]
ATTEMPTS = 3  # plans made again when another writer changed a fact meanwhile

_SNAPSHOT = (FACT.id, FACT.agentId, FACT.userId, FACT.text, FACT.hash, FACT.subject)
_SNAPSHOT_COLUMNS = (*_SNAPSHOT, FACT.retiredAt, FACT.updatedAt)
# By primary key only, the scope checked on the rows (see liz.facts.queries).
_BY_ID = (
    select(*_SNAPSHOT_COLUMNS).where(FACT.id.in_(bindparam("ids", expanding=True)))
).with_for_update()
_BY_HASH = (
    select(*_SNAPSHOT_COLUMNS)
    .where(FACT.agentId == bindparam("agent"), FACT.userId == bindparam("user"))
    .where(FACT.hash.in_(bindparam("hashes", expanding=True)), FACT.retiredAt.is_(None))
    .order_by(FACT.createdAt, FACT.id)
)


async def read_snapshot(
    session: AsyncSession, scope: Scope, ids: Iterable[str], hashes: Iterable[str]
) -> Snapshot:
    """The facts with these ids or text hashes, in the session's (locked) transaction."""
    targets: dict[str, Stored] = {}
    if wanted := sorted(set(ids)):
        for row in await session.execute(_BY_ID, {"ids": wanted}):
            if (row[1], row[2]) == scope:
                targets[row[0]] = _stored(row)
    by_hash: dict[str, Stored] = {}
    if digests := sorted(set(hashes)):
        values = {**scope_values(scope), "hashes": digests}
        for row in await session.execute(_BY_HASH, values):
            by_hash.setdefault(row[4], _stored(row))
    return Snapshot(targets, by_hash)


def _stored(row: Sequence[Any]) -> Stored:
    return Stored(row[0], row[3], row[4], row[5], row[6] is not None, row[7])


async def run_extra(session: AsyncSession, also: Sequence[ExtraStatement]) -> None:
    """Run the caller's statements in the session's transaction; a rowcount other than
    expected raises :class:`ExtraStatementMismatch` (the transaction then rolls back)."""
    for extra in also:
        if extra.statement is not None:
            result: Any = await session.execute(extra.statement)
            if extra.expected_rows is not None and result.rowcount != extra.expected_rows:
                raise ExtraStatementMismatch(
                    f"a statement run with the facts touched {result.rowcount} rows, "
                    f"not {extra.expected_rows}: nothing was written"
                )
        for statement in extra.made_at_commit() if extra.made_at_commit else ():
            await session.execute(statement)


@dataclass(frozen=True)
class Write:
    """One write: who writes (``context``), the facts it reads under the lock (``ids``,
    text ``hashes``), the ``plan`` that decides from them, the embedding of every text
    it adds or updates, and the caller's statements to run after it."""

    context: WriteContext
    plan: Plan
    vectors: Mapping[str, Vector]
    ids: Sequence[str]
    hashes: Sequence[str]
    also: Sequence[ExtraStatement] = ()


def still_valid(changes: Sequence[Change]) -> Plan:
    """A plan made before the transaction, checked against it: :class:`PlanConflict`
    when a fact it changes was retired or changed meanwhile."""

    def check(snapshot: Snapshot) -> Sequence[Change]:
        for change in changes:
            if change.event in (Event.UPDATE, Event.DELETE):
                target = snapshot.targets.get(change.fact_id or "")
                if target is None or target.retired:
                    raise PlanConflict(f"fact {change.fact_id} was retired meanwhile")
                expected = change.expected_updated_at
                if expected and target.updated_at != expected:
                    raise PlanConflict(f"fact {change.fact_id} was changed meanwhile")
        return changes

    return check


@dataclass
class Rows:
    """The rows one write inserts and updates, keyed by column name; an update's row
    names its fact under ``target``."""

    context: WriteContext
    facts: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)

    def record(
        self, fact_id: str, event: Event, old: str | None, new: str | None, why: str
    ) -> None:
        context = self.context
        self.history.append(
            {
                "factId": fact_id,
                "agentId": context.scope[0],
                "userId": context.scope[1],
                "event": event.value,
                "oldText": old,
                "newText": new,
                "createdAt": context.now,
                "actor": context.actor,
                "reason": why,
            }
        )


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
        vector = vectors[change.text]
        if change.event is Event.UPDATE:
            target = snapshot.targets[change.fact_id or ""]
            if target.hash == digest:
                events.append(FactEvent(Event.NOOP, target.id, target.text, reason="unchanged"))
                continue
            fact_id = target.id
            if existing.get(target.hash) == target:
                del existing[target.hash]  # the fact no longer says its old text
            rows.updates.append(_updated(target, change, vector, context))
            rows.record(fact_id, Event.UPDATE, target.text, change.text, change.reason)
            events.append(FactEvent(Event.UPDATE, fact_id, change.text, target.text, change.reason))
        else:
            fact_id = new_fact_id()
            rows.facts.append(_inserted(fact_id, change, vector, context))
            rows.record(fact_id, Event.ADD, None, change.text, change.reason)
            events.append(FactEvent(Event.ADD, fact_id, change.text, reason=change.reason))
            if change.retired:
                rows.record(fact_id, Event.DELETE, change.text, None, change.reason)
                events.append(
                    FactEvent(Event.DELETE, fact_id, change.text, change.text, change.reason)
                )
                continue  # never active: neither searched nor a duplicate to later changes
        scope = context.scope
        log.added.append(
            IndexedFact(
                fact_id, *scope, change.text, digest, vector, context.model, int(vector.size)
            )
        )
        existing[digest] = Stored(fact_id, change.text, digest, change.subject, False, None)
    return rows, events


def new_fact_id() -> str:
    """A UUID laid out as version 7 (RFC 9562): the time in milliseconds first, then 74
    random bits. Ids that grow with time keep inserts in the rightmost leaves of the
    indexes keyed by id, where random ones touch a random page each."""
    millis = time.time_ns() // 1_000_000 & (1 << 48) - 1
    random = int.from_bytes(os.urandom(10), "big")
    value = millis << 80 | 0x7 << 76 | (random >> 62 & 0xFFF) << 64 | 0b10 << 62
    return str(uuid.UUID(int=value | random & (1 << 62) - 1))


def _embedding(vector: Vector, context: WriteContext) -> dict[str, Any]:
    return {
        "embedding": for_storage(vector, context.dialect),
        "embeddingModel": context.model,
        "embeddingDim": int(vector.size),
    }


def _inserted(
    fact_id: str, change: Change, vector: Vector, context: WriteContext
) -> dict[str, Any]:
    return {
        "id": fact_id,
        "agentId": context.scope[0],
        "userId": context.scope[1],
        "text": change.text,
        "subject": change.subject,
        "categories": json.dumps(list(change.categories)),
        "hash": fact_hash(change.text),
        **_embedding(vector, context),
        "createdAt": context.now,
        "updatedAt": context.now,
        "validFrom": context.now,
        "invalidFrom": context.now if change.retired else None,
        "retiredAt": context.now if change.retired else None,
        "sourceMemoryId": change.source_memory_id or context.source_memory_id,
    }


def _updated(
    target: Stored, change: Change, vector: Vector, context: WriteContext
) -> dict[str, Any]:
    row = {
        "target": target.id,
        "text": change.text,
        "hash": fact_hash(change.text),
        **_embedding(vector, context),
        "updatedAt": context.now,
    }
    if change.categories:
        row["categories"] = json.dumps(list(change.categories))
    return row


def _retire(target: Stored, change: Change, rows: Rows, log: ChangeLog) -> FactEvent:
    now = rows.context.now
    rows.updates.append(
        {"target": target.id, "retiredAt": now, "invalidFrom": now, "updatedAt": now}
    )
    rows.record(target.id, Event.DELETE, target.text, None, change.reason)
    log.removed.append(target.id)
    return FactEvent(Event.DELETE, target.id, target.text, target.text, change.reason)


class ScopeWrites:
    """One writer per scope in this process; the commit's lock (PostgreSQL's advisory
    lock, SQLite's write lock) orders writers across processes."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._locks: weakref.WeakValueDictionary[Scope, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    async def run(self, scope: Scope, write: Callable[[], Awaitable[T]]) -> T:
        """Run ``write`` (which plans and commits) under the scope's lock, again on a
        :class:`PlanConflict`; :class:`StorageError` when conflicts keep coming."""
        lock = self._locks.get(scope)
        if lock is None:
            lock = self._locks[scope] = asyncio.Lock()
        conflict = f"the facts of user {scope[1]!r} kept changing while being written; try again"
        async with lock:
            try:
                async for attempt in retrying(
                    retry_if=lambda exc: isinstance(exc, PlanConflict),
                    attempts=ATTEMPTS,
                    wait=wait_none(),
                    clock=self._clock,
                ):
                    with attempt, database_errors():
                        return await write()
            except PlanConflict as exc:
                raise StorageError(conflict) from exc
        raise StorageError(conflict)  # not reached: `retrying` returns or raises


@contextmanager
def database_errors() -> Iterator[None]:
    """Translate the database driver's failures, here and only here, into StorageError."""
    try:
        yield
    except (SQLAlchemyError, OSError, sqlite3.Error) as exc:
        detail = getattr(exc, "orig", None) or exc
        raise StorageError(
            f"the facts database failed ({type(detail).__name__}: {detail}); check that it is "
            "reachable and migrated (`liz db upgrade`)"
        ) from exc
