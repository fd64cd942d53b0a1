"""Committing a write plan: one transaction, a history row for each change, nothing
overwritten unseen.

Targets are checked as they are now, under a per-scope lock: a fact retired or
changed since the plan was made raises :class:`PlanConflict` (the caller plans
again) rather than applying a decision made on stale text.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.facts.domain import Change, Event, FactEvent, PlanConflict, Scope, WriteContext
from liz.facts.index.protocol import ChangeLog, FactIndex, IndexedFact
from liz.facts.normalize import fact_hash
from liz.facts.queries import active_by_hash, records_by_id
from liz.facts.tables import FactHistoryRecord, FactRecord
from liz.facts.vectors import Vector, for_storage


@dataclass
class _Journal:
    """One write's context, its change log and the history rows it adds."""

    context: WriteContext
    log: ChangeLog
    rows: list[FactHistoryRecord]

    def history(
        self, record: FactRecord, event: Event, old: str | None, new: str | None, change: Change
    ) -> None:
        row = FactHistoryRecord(
            fact_id=record.id,
            agent_id=record.agent_id,
            user_id=record.user_id,
            event=event.value,
            old_text=old,
            new_text=new,
            created_at=self.context.now,
            actor=self.context.actor,
            reason=change.reason,
        )
        self.rows.append(row)


async def commit_changes(
    sessions: async_sessionmaker[AsyncSession],
    index: FactIndex,
    changes: Sequence[Change],
    vectors: Mapping[str, Vector],
    context: WriteContext,
) -> list[FactEvent]:
    """Apply ``changes`` in one transaction and tell ``index`` what changed; return what
    was done, in order. ``vectors`` holds the embedding of every text added or updated.

    Raises :class:`PlanConflict` when a target changed since the plan was made.
    """
    log = ChangeLog()
    async with sessions() as session, session.begin():
        events = await _apply_changes(session, index, changes, vectors, context, log)
    index.absorb(context.scope, log)
    return events


async def _lock_scope(session: AsyncSession, scope: Scope, dialect: str) -> None:
    """Serialize writers of one scope across processes (SQLite serializes all writers)."""
    if dialect == "postgresql":
        digest = hashlib.sha256(f"liz-facts\x00{scope[0]}\x00{scope[1]}".encode()).digest()
        key = int.from_bytes(digest[:8], "big", signed=True)
        await session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


async def _apply_changes(
    session: AsyncSession,
    index: FactIndex,
    changes: Sequence[Change],
    vectors: Mapping[str, Vector],
    context: WriteContext,
    log: ChangeLog,
) -> list[FactEvent]:
    """Apply ``changes`` in the session's transaction; return what was done, in order.

    ``log`` collects what changed; after the commit, pass it to ``index.absorb``.
    """
    scope = context.scope
    journal = _Journal(context, log, [])
    await _lock_scope(session, scope, context.dialect)
    target_ids = [c.fact_id for c in changes if c.fact_id and c.event is not Event.NOOP]
    targets = await records_by_id(session, scope, target_ids, for_update=True)
    for change in changes:
        if change.event in (Event.UPDATE, Event.DELETE):
            record = targets.get(change.fact_id or "")
            if record is None or record.retired_at is not None:
                raise PlanConflict(f"fact {change.fact_id} was retired meanwhile")
            if change.expected_updated_at and record.updated_at != change.expected_updated_at:
                raise PlanConflict(f"fact {change.fact_id} was changed meanwhile")
    retiring = {c.fact_id for c in changes if c.event is Event.DELETE}
    new_hashes = [fact_hash(c.text) for c in changes if c.event in (Event.ADD, Event.UPDATE)]
    existing = {
        digest: record
        for digest, record in (await active_by_hash(session, scope, new_hashes)).items()
        if record.id not in retiring
    }
    events: list[FactEvent] = []
    for change in changes:
        if change.event is Event.DELETE:
            events.append(
                await _retire(session, index, targets[change.fact_id or ""], change, journal)
            )
        elif change.event is Event.NOOP:
            events.append(
                FactEvent(Event.NOOP, change.fact_id or "", change.text, reason=change.reason)
            )
        else:
            digest = fact_hash(change.text)
            duplicate = existing.get(digest)
            if duplicate is not None and duplicate.id != change.fact_id:
                events.append(
                    FactEvent(
                        Event.NOOP,
                        duplicate.id,
                        duplicate.text,
                        reason="exact duplicate of a stored fact",
                    )
                )
                continue
            if change.event is Event.UPDATE:
                record = targets[change.fact_id or ""]
                if record.hash == digest:
                    events.append(FactEvent(Event.NOOP, record.id, record.text, reason="unchanged"))
                    continue
                events.append(await _update(session, index, record, change, vectors, journal))
            else:
                record = await _insert(session, index, change, vectors, journal)
                events.append(FactEvent(Event.ADD, record.id, record.text, reason=change.reason))
            existing[digest] = record
    session.add_all(journal.rows)
    await session.flush()
    log.history_ids.extend(row.id for row in journal.rows)
    return events


async def _insert(
    session: AsyncSession,
    index: FactIndex,
    change: Change,
    vectors: Mapping[str, Vector],
    journal: _Journal,
) -> FactRecord:
    context = journal.context
    vector = vectors[change.text]
    record = FactRecord(
        id=str(uuid.uuid4()),
        agent_id=context.scope[0],
        user_id=context.scope[1],
        text=change.text,
        subject=change.subject,
        categories=json.dumps(list(change.categories)),
        hash=fact_hash(change.text),
        embedding=for_storage(vector, context.dialect),
        embedding_model=context.model,
        embedding_dim=int(vector.size),
        created_at=context.now,
        updated_at=context.now,
        valid_from=context.now,
        invalid_from=None,
        retired_at=None,
        source_memory_id=context.source_memory_id,
    )
    session.add(record)
    await session.flush()  # the fact row before its history row (foreign key)
    journal.history(record, Event.ADD, None, record.text, change)
    await _indexed(session, index, record, vector, journal)
    return record


async def _update(
    session: AsyncSession,
    index: FactIndex,
    record: FactRecord,
    change: Change,
    vectors: Mapping[str, Vector],
    journal: _Journal,
) -> FactEvent:
    context = journal.context
    old_text = record.text
    vector = vectors[change.text]
    record.text = change.text
    record.hash = fact_hash(change.text)
    if change.categories:
        record.categories = json.dumps(list(change.categories))
    record.embedding = for_storage(vector, context.dialect)
    record.embedding_model = context.model
    record.embedding_dim = int(vector.size)
    record.updated_at = context.now
    journal.history(record, Event.UPDATE, old_text, record.text, change)
    await index.facts_removed(session, [record.id])
    await _indexed(session, index, record, vector, journal)
    return FactEvent(Event.UPDATE, record.id, record.text, old_text=old_text, reason=change.reason)


async def _retire(
    session: AsyncSession,
    index: FactIndex,
    record: FactRecord,
    change: Change,
    journal: _Journal,
) -> FactEvent:
    now = journal.context.now
    record.retired_at = now
    record.invalid_from = now
    record.updated_at = now
    journal.history(record, Event.DELETE, record.text, None, change)
    journal.log.removed.append(record.id)
    await index.facts_removed(session, [record.id])
    return FactEvent(
        Event.DELETE, record.id, record.text, old_text=record.text, reason=change.reason
    )


async def _indexed(
    session: AsyncSession, index: FactIndex, record: FactRecord, vector: Vector, journal: _Journal
) -> None:
    fact = IndexedFact(
        record.id,
        record.agent_id,
        record.user_id,
        record.text,
        record.hash,
        vector,
        record.embedding_model,
        record.embedding_dim,
    )
    journal.log.added.append(fact)
    await index.facts_added(session, [fact])
