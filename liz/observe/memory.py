"""The facts store, observed: a span per search and write, named as the GenAI conventions'
memory operations are (``search_memory``; ``upsert_memory`` when learning decides what to
add, update or retire; ``update_memory`` for an explicit batch), and the facts learned,
updated and retired counted in the metrics."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any

from liz.observe import metrics
from liz.observe.tracing import span, tracing_on

# What gen_ai.memory.store.id names: liz's facts store (its scope is the agent and user).
STORE_ID = "liz.facts"


def memory_span(operation: str, agent_id: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A span ``{operation}`` (``search_memory``, ``upsert_memory``...) around the block."""
    if not tracing_on():
        return span(operation)
    given = {
        "gen_ai.operation.name": operation,
        "gen_ai.memory.store.id": STORE_ID,
        "gen_ai.agent.id": agent_id,
        **attributes,
    }
    return span(operation, given)


def records_found(current: Any, count: int) -> None:
    """How many facts a search returned, on its span."""
    if current is not None:
        current.set_attribute("gen_ai.memory.record.count", count)


def count_events(events: Iterable[Any]) -> None:
    """Count what learning did (``FactEvent``: ADD, UPDATE, DELETE retires and adds)."""
    kinds = [str(event.event) for event in events]
    metrics.fact_changes(
        learned=kinds.count("ADD") + kinds.count("DELETE"),
        updated=kinds.count("UPDATE"),
        retired=kinds.count("DELETE"),
    )


def count_items(items: Iterable[Any]) -> None:
    """Count what an explicit batch did (``ItemResult`` applied: add, update, delete)."""
    applied = [str(item.op) for item in items if str(item.status) == "applied"]
    metrics.fact_changes(
        learned=applied.count("add"),
        updated=applied.count("update"),
        retired=applied.count("delete"),
    )
