"""Explicit operations from callers (``MemoryStore.apply``): checked item by item.

Refused: an unknown or retired id, empty text, an id named by more than one item,
a malformed item. Reported as a duplicate (nothing written): an add or update
whose text a stored fact already says. Everything else is applied in one transaction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from liz.memory.index_base import ChangeLog, Scope
from liz.memory.normalize import fact_hash
from liz.memory.queries import active_by_hash, records_by_id
from liz.memory.reconcile import Change
from liz.memory.schemas import MAX_FACT_CHARS, Event
from liz.memory.types import FactOperation, ItemResult, ItemStatus
from liz.memory.writes import apply_changes

if TYPE_CHECKING:
    from liz.memory.store import MemoryStore

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
    store: MemoryStore,
    scope: Scope,
    batch: Sequence[FactOperation | Mapping[str, Any]],
    actor: str,
) -> list[ItemResult]:
    parsed = [_parse(item) for item in batch]
    operations = [item for item in parsed if isinstance(item, FactOperation)]
    counts = Counter(op.id for op in operations if op.id)
    repeated = {fact_id for fact_id, count in counts.items() if count > 1}
    results: dict[int, ItemResult] = {}
    accepted: list[tuple[int, FactOperation]] = []
    for index, item in enumerate(parsed):
        name = item.op if isinstance(item, FactOperation) else str(_field(batch[index], "op"))
        problem = item if isinstance(item, str) else _problem(item, repeated)
        if problem is not None:
            results[index] = ItemResult(index, name, ItemStatus.REFUSED, None, problem)
        elif isinstance(item, FactOperation):
            accepted.append((index, item))
    async with store.sessions() as session:
        ids = [op.id for _, op in accepted if op.id]
        targets = await records_by_id(session, scope, ids)
        texts = [(op.text or "").strip() for _, op in accepted if op.op != "delete"]
        stored = await active_by_hash(session, scope, [fact_hash(t) for t in texts])
    # A fact this batch retires is no duplicate of an item that says it again.
    deleting = {op.id for _, op in accepted if op.op == "delete"}
    changes: list[tuple[int, Change]] = []
    for index, op in accepted:
        record = targets.get(op.id or "")
        if op.id and (record is None or record.retired_at is not None):
            reason = f"no active fact with id {op.id!r} for this agent and user"
            results[index] = ItemResult(index, op.op, ItemStatus.REFUSED, op.id, reason)
            continue
        text = (op.text or "").strip() if op.op != "delete" else (record.text if record else "")
        duplicate = stored.get(fact_hash(text)) if op.op != "delete" else None
        if duplicate is not None and duplicate.id not in deleting:
            same = "already says this" if duplicate.id != op.id else "already has this text"
            results[index] = ItemResult(
                index,
                op.op,
                ItemStatus.DUPLICATE,
                duplicate.id,
                f"stored fact {duplicate.id} {same}",
            )
            continue
        categories = tuple(c.strip() for c in op.categories or () if c.strip())
        changes.append(
            (
                index,
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
        vectors = dict(zip(unique, await store.embed(unique), strict=True)) if unique else {}
        context = store.write_context(scope, actor)
        log = ChangeLog()
        async with store.sessions() as session, session.begin():
            events = await apply_changes(
                session, store.index, [c for _, c in changes], vectors, context, log
            )
        store.index.absorb(scope, log)
        for (index, change), event in zip(changes, events, strict=True):
            name = change.event.value.lower()
            if event.event is Event.NOOP:
                results[index] = ItemResult(
                    index,
                    name,
                    ItemStatus.DUPLICATE,
                    event.fact_id,
                    f"stored fact {event.fact_id} already says this",
                )
            else:
                results[index] = ItemResult(
                    index, name, ItemStatus.APPLIED, event.fact_id, change.reason
                )
    return [results[index] for index in range(len(batch))]


def _field(item: object, name: str) -> object:
    return item.get(name, "?") if isinstance(item, Mapping) else "?"
