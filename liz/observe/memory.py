"""The facts store, observed: a span per search and write, as the GenAI memory operations
name them, and the facts learned, updated and retired counted in the metrics."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any

from liz.observe import metrics
from liz.observe.tracing import span, tracing_on


def memory_span(operation: str, agent_id: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A span ``{operation} facts`` (``search_memory``, ``update_memory``) around the block."""
    if not tracing_on():
        return span(operation)
    given = {
        "gen_ai.operation.name": operation,
        "gen_ai.memory.store": "liz.facts",
        "gen_ai.agent.id": agent_id,
        **attributes,
    }
    return span(f"{operation} facts", given)


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
