"""Learning extracted facts: drop known ones, find similar ones, reconcile, commit.

Runs under the scope's lock; a :class:`PlanConflict` from the commit means the
caller should run it again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.facts.commit import commit_changes
from liz.facts.domain import Event, Fact, FactEvent, NewFact, Scope, WriteContext
from liz.facts.extraction import SourcedFact
from liz.facts.index.protocol import FactIndex
from liz.facts.normalize import fact_hash
from liz.facts.queries import active_by_hash, records_by_id, to_fact
from liz.facts.reconcile import add_all, ask_for_plan, resolve_plan
from liz.facts.settings import FactSettings
from liz.facts.shortids import ShortIds
from liz.facts.vectors import embed
from liz.llm import LLMClient
from liz.templates import PromptTemplates

logger = logging.getLogger(__name__)


async def learn_facts(
    extracted: Sequence[SourcedFact],
    context: WriteContext,
    *,
    sessions: async_sessionmaker[AsyncSession],
    reads: async_sessionmaker[AsyncSession],
    index: FactIndex,
    llm: LLMClient,
    templates: PromptTemplates,
    settings: FactSettings,
) -> list[FactEvent]:
    """Deduplicate, reconcile with the LLM and write one add's facts in one transaction,
    whether they came from one message or several (each fact added keeps its own
    ``source_memory_id``; a fact said twice is credited to the first message saying it).

    What it reads to plan goes through ``reads`` (beside the writer); the commit
    checks the plan again under the write lock.
    """
    scope = context.scope
    unique: dict[str, SourcedFact] = {}
    for found in extracted:
        unique.setdefault(fact_hash(found.fact.text), found)
    async with reads() as session:
        known = await active_by_hash(session, scope, list(unique))
    # Exact duplicates never reach the LLM: they are reported with the stored id.
    events = [
        FactEvent(Event.NOOP, record.id, record.text, reason="exact duplicate of a stored fact")
        for record in known.values()
    ]
    fresh = [(digest, fact) for digest, fact in unique.items() if digest not in known]
    if not fresh:
        return events
    vectors = await embed(llm, [found.fact.text for _, found in fresh])
    new_facts = [
        NewFact(
            found.fact.text,
            found.fact.subject,
            tuple(found.fact.categories),
            digest,
            vector,
            found.source_memory_id,
        )
        for (digest, found), vector in zip(fresh, vectors, strict=True)
    ]
    # Before the session: a PostgreSQL index build takes a connection of its own.
    await index.prepare_dimension(int(new_facts[0].vector.size))
    async with reads() as session:
        similar = await _similar(session, index, scope, new_facts, llm.embedding_model, settings)
    if not similar:
        changes = add_all(new_facts, "nothing similar was stored")
    else:
        shown = ShortIds(similar)
        plan = await ask_for_plan(llm, templates, shown, new_facts, size=settings.model_size)
        changes = resolve_plan(plan, new_facts, shown)
    text_vectors = {fact.text: fact.vector for fact in new_facts}
    missing = sorted(
        {c.text for c in changes if c.event in (Event.ADD, Event.UPDATE)} - set(text_vectors)
    )
    if missing:
        text_vectors.update(zip(missing, await embed(llm, missing), strict=True))
    events += await commit_changes(sessions, index, changes, text_vectors, context)
    for change in changes:
        logger.debug("fact %s %s: %s", change.event.value, change.fact_id or "(new)", change.text)
    return events


async def _similar(
    session: AsyncSession,
    index: FactIndex,
    scope: Scope,
    new_facts: Sequence[NewFact],
    model: str,
    settings: FactSettings,
) -> list[Fact]:
    """Active facts of the scope at least ``reconcile_threshold`` similar to a new fact."""
    ids: list[str] = []
    for fact in new_facts:
        found = await index.vector_candidates(
            session,
            scope,
            fact.vector,
            model=model,
            limit=settings.reconcile_candidates,
            threshold=settings.reconcile_threshold,
        )
        ids.extend(fact_id for fact_id, _, _ in found if fact_id not in ids)
    records = await records_by_id(session, scope, ids)
    return [to_fact(records[fact_id]) for fact_id in ids if fact_id in records]
