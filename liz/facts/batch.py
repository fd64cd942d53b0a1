"""Explicit operations from callers (``FactStore.apply``): checked item by item.

Refused: an unknown or retired id, empty text, an id named by more than one item,
a malformed item. Reported as a duplicate (nothing written): an add or update
whose text a stored fact already says. Everything else is applied in one transaction,
the same one that checks ids and duplicates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from liz.facts.domain import (
    MAX_FACT_CHARS,
    Change,
    Event,
    FactOperation,
    ItemResult,
    ItemStatus,
    Snapshot,
    WriteContext,
)
from liz.facts.normalize import fact_hash
from liz.facts.storage import FactStorage
from liz.facts.vectors import embed
from liz.facts.writes import Write
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
    storage: FactStorage,
    llm: LLMClient,
) -> list[ItemResult]:
    """Check each item and write the accepted ones in one transaction; results in order.

    Texts are embedded first, outside the transaction; ids and duplicates are then
    checked under the scope's write lock, so nothing can change in between.
    """
    results, accepted = _validated(batch)
    if not accepted:
        return [results[position] for position in range(len(batch))]
    texts = sorted({(op.text or "").strip() for _, op in accepted if op.op != "delete"})
    vectors = dict(zip(texts, await embed(llm, texts), strict=True)) if texts else {}
    positions: list[int] = []

    def plan(snapshot: Snapshot) -> list[Change]:
        planned = _planned(accepted, snapshot, results, context.actor)
        positions.extend(position for position, _ in planned)
        return [change for _, change in planned]

    ids = [op.id for _, op in accepted if op.id]
    hashes = [fact_hash(text) for text in texts]
    changes, events = await storage.write(Write(context, plan, vectors, ids, hashes))
    for position, change, event in zip(positions, changes, events, strict=True):
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


def _validated(
    batch: Sequence[FactOperation | Mapping[str, Any]],
) -> tuple[dict[int, ItemResult], list[tuple[int, FactOperation]]]:
    """Items refused on their own (malformed, no text, repeated id), and the others."""
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
    return results, accepted


def _planned(
    accepted: Sequence[tuple[int, FactOperation]],
    snapshot: Snapshot,
    results: dict[int, ItemResult],
    actor: str,
) -> list[tuple[int, Change]]:
    """The changes for the items the stored facts allow; the others go into ``results``."""
    # A fact this batch retires is no duplicate of an item that says it again.
    deleting = {op.id for _, op in accepted if op.op == "delete"}
    changes: list[tuple[int, Change]] = []
    for position, op in accepted:
        target = snapshot.targets.get(op.id or "")
        if op.id and (target is None or target.retired):
            reason = f"no active fact with id {op.id!r} for this agent and user"
            results[position] = ItemResult(position, op.op, ItemStatus.REFUSED, op.id, reason)
            continue
        text = (op.text or "").strip() if op.op != "delete" else (target.text if target else "")
        duplicate = snapshot.by_hash.get(fact_hash(text)) if op.op != "delete" else None
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
                    subject=target.subject if target else (op.subject or "user"),
                    categories=categories or (DEFAULT_CATEGORIES if op.op == "add" else ()),
                    reason=op.reason or f"{op.op} requested by {actor}",
                ),
            )
        )
    return changes


def _field(item: object, name: str) -> object:
    return item.get(name, "?") if isinstance(item, Mapping) else "?"
