"""Explicit operations from callers (``FactStore.apply``): checked item by item.

Refused: an unknown or retired id, empty text, an id named by more than one item,
a malformed item. Reported as a duplicate (nothing written): an add or update
whose text a stored fact already says. Everything else is applied in one transaction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.facts.commit import commit_changes
from liz.facts.domain import (
    MAX_FACT_CHARS,
    Change,
    Event,
    FactOperation,
    ItemResult,
    ItemStatus,
    WriteContext,
)
from liz.facts.index.protocol import FactIndex
from liz.facts.normalize import fact_hash
from liz.facts.queries import active_by_hash, records_by_id
from liz.facts.vectors import embed
from liz.llm import LLMClient

DEFAULT_CATEGORIES = ("manual", "user")
_EVENTS = {"add": Event.ADD, "update": Event.UPDATE, "delete": Event.DELETE}


def _parse(item: FactOperation | Mapping[str, Any]) -> FactOperation | str:
    if isinstance(item, FactOperation):
        return item
    try:
        return FactOperation.model_validate(item)
    except ValidationError as exc:
        return "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'item'}: {e['msg']}" for e in exc.errors()
        )


def _problem(operation: FactOperation, repeated: set[str]) -> str | None:
    if operation.op != "add" and not operation.id:
        return f"{operation.op} needs the id of the fact"
    if operation.op == "add" and operation.id:
        return "add takes no id: the store gives the new fact its id"
    if operation.id and operation.id in repeated:
        return f"id {operation.id!r} appears in more than one item; send one operation per fact"
    if operation.op != "delete" and not (operation.text or "").strip():
        return f"{operation.op} needs a non-empty text"
    if operation.op != "delete" and len((operation.text or "").strip()) > MAX_FACT_CHARS:
        return f"a fact is at most {MAX_FACT_CHARS} characters; split this text into facts"
    if operation.categories is not None:
        cleaned = [c.strip() for c in operation.categories if c.strip()]
        if not 2 <= len(cleaned) <= 5:
            return f"categories must be 2 to 5 non-empty words, got {len(cleaned)}"
    return None


async def apply_batch(
    batch: Sequence[FactOperation | Mapping[str, Any]],
    context: WriteContext,
    *,
    sessions: async_sessionmaker[AsyncSession],
    index: FactIndex,
    llm: LLMClient,
) -> list[ItemResult]:
    """Check each item, then write the accepted ones in one transaction; results in order.

    Raises :class:`PlanConflict` when a target changed between the check and the write.
    """
    scope, actor = context.scope, context.actor
    parsed = [_parse(item) for item in batch]
    operations = [item for item in parsed if isinstance(item, FactOperation)]
    counts = Counter(op.id for op in operations if op.id)
    repeated = {fact_id for fact_id, count in counts.items() if count > 1}
    results: dict[int, ItemResult] = {}
    accepted: list[tuple[int, FactOperation]] = []
    for position, item in enumerate(parsed):
        name = item.op if isinstance(item, FactOperation) else str(_field(batch[position], "op"))
        problem = item if isinstance(item, str) else _problem(item, repeated)
        if problem is not None:
            results[position] = ItemResult(position, name, ItemStatus.REFUSED, None, problem)
        elif isinstance(item, FactOperation):
            accepted.append((position, item))
    async with sessions() as session:
        ids = [op.id for _, op in accepted if op.id]
        targets = await records_by_id(session, scope, ids)
        texts = [(op.text or "").strip() for _, op in accepted if op.op != "delete"]
        stored = await active_by_hash(session, scope, [fact_hash(t) for t in texts])
    # A fact this batch retires is no duplicate of an item that says it again.
    deleting = {op.id for _, op in accepted if op.op == "delete"}
    changes: list[tuple[int, Change]] = []
    for position, op in accepted:
        record = targets.get(op.id or "")
        if op.id and (record is None or record.retired_at is not None):
            reason = f"no active fact with id {op.id!r} for this agent and user"
            results[position] = ItemResult(position, op.op, ItemStatus.REFUSED, op.id, reason)
            continue
        text = (op.text or "").strip() if op.op != "delete" else (record.text if record else "")
        duplicate = stored.get(fact_hash(text)) if op.op != "delete" else None
        if duplicate is not None and duplicate.id not in deleting:
            same = "already says this" if duplicate.id != op.id else "already has this text"
            results[position] = ItemResult(
                position,
                op.op,
                ItemStatus.DUPLICATE,
                duplicate.id,
                f"stored fact {duplicate.id} {same}",
            )
            continue
        categories = tuple(c.strip() for c in op.categories or () if c.strip())
        changes.append(
            (
                position,
                Change(
                    _EVENTS[op.op],
                    text,
                    fact_id=op.id,
                    subject=record.subject if record else (op.subject or "user"),
                    categories=categories or (DEFAULT_CATEGORIES if op.op == "add" else ()),
                    reason=op.reason or f"{op.op} requested by {actor}",
                ),
            )
        )
    if changes:
        written = [c.text for _, c in changes if c.event is not Event.DELETE]
        unique = sorted(set(written))
        vectors = dict(zip(unique, await embed(llm, unique), strict=True)) if unique else {}
        events = await commit_changes(sessions, index, [c for _, c in changes], vectors, context)
        for (position, change), event in zip(changes, events, strict=True):
            name = change.event.value.lower()
            if event.event is Event.NOOP:
                results[position] = ItemResult(
                    position,
                    name,
                    ItemStatus.DUPLICATE,
                    event.fact_id,
                    f"stored fact {event.fact_id} already says this",
                )
            else:
                results[position] = ItemResult(
                    position, name, ItemStatus.APPLIED, event.fact_id, change.reason
                )
    return [results[position] for position in range(len(batch))]


def _field(item: object, name: str) -> object:
    return item.get(name, "?") if isinstance(item, Mapping) else "?"
