"""The reconcile-and-write half of ``MemoryStore.add``, run under the scope's lock."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from liz.memory.index_base import ChangeLog, Scope
from liz.memory.normalize import fact_hash
from liz.memory.queries import active_by_hash, records_by_id, to_fact
from liz.memory.reconcile import NewFact, add_all, resolve_plan
from liz.memory.schemas import Event, ExtractedFact, ReconcilePlan
from liz.memory.shortids import ShortIds
from liz.memory.types import Fact, FactEvent
from liz.memory.writes import apply_changes

if TYPE_CHECKING:
    from liz.memory.store import MemoryStore

logger = logging.getLogger(__name__)


async def reconcile_and_write(
    store: MemoryStore,
    scope: Scope,
    extracted: Sequence[ExtractedFact],
    source_memory_id: str | None,
) -> list[FactEvent]:
    """Deduplicate, reconcile with the LLM and write one add's facts in one transaction."""
    unique: dict[str, ExtractedFact] = {}
    for fact in extracted:
        unique.setdefault(fact_hash(fact.text), fact)
    async with store.sessions() as session:
        known = await active_by_hash(session, scope, list(unique))
    # Exact duplicates never reach the LLM: they are reported with the stored id.
    events = [
        FactEvent(Event.NOOP, record.id, record.text, reason="exact duplicate of a stored fact")
        for record in known.values()
    ]
    fresh = [(digest, fact) for digest, fact in unique.items() if digest not in known]
    if not fresh:
        return events
    vectors = await store.embed([fact.text for _, fact in fresh])
    new_facts = [
        NewFact(fact.text, fact.subject, tuple(fact.categories), digest, vector)
        for (digest, fact), vector in zip(fresh, vectors, strict=True)
    ]
    similar = await _similar(store, scope, new_facts)
    if not similar:
        changes = add_all(new_facts, "nothing similar was stored")
    else:
        shown = ShortIds(similar)
        prompt = store.templates.render(
            "facts_reconcile.j2",
            existing=shown.numbered(),
            new_facts=list(enumerate(new_facts, start=1)),
        )
        plan = await store.llm.structured(prompt, ReconcilePlan, size=store.settings.model_size)
        changes = resolve_plan(plan, new_facts, shown)
    text_vectors = {fact.text: fact.vector for fact in new_facts}
    missing = sorted(
        {c.text for c in changes if c.event in (Event.ADD, Event.UPDATE)} - set(text_vectors)
    )
    if missing:
        text_vectors.update(zip(missing, await store.embed(missing), strict=True))
    context = store.write_context(scope, "llm", source_memory_id)
    log = ChangeLog()
    async with store.sessions() as session, session.begin():
        events += await apply_changes(session, store.index, changes, text_vectors, context, log)
    store.index.absorb(scope, log)
    for change in changes:
        logger.debug("fact %s %s: %s", change.event.value, change.fact_id or "(new)", change.text)
    return events


async def _similar(store: MemoryStore, scope: Scope, new_facts: Sequence[NewFact]) -> list[Fact]:
    """Active facts of the scope at least ``reconcile_threshold`` similar to a new fact."""
    settings = store.settings
    ids: list[str] = []
    await store.index.prepare_dimension(int(new_facts[0].vector.size))
    async with store.sessions() as session:
        for fact in new_facts:
            found = await store.index.vector_candidates(
                session,
                scope,
                fact.vector,
                model=store.llm.embedding_model,
                limit=settings.reconcile_candidates,
                threshold=settings.reconcile_threshold,
            )
            ids.extend(fact_id for fact_id, _, _ in found if fact_id not in ids)
        records = await records_by_id(session, scope, ids)
    return [to_fact(records[fact_id]) for fact_id in ids if fact_id in records]
