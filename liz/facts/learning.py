"""Learning extracted facts: drop known ones, find similar ones, reconcile, commit.

Runs under the scope's lock; a :class:`PlanConflict` from the commit means the
caller should run it again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.facts.domain import Change, Event, ExtraStatement, FactEvent, NewFact, WriteContext
from liz.facts.extraction import SourcedFact
from liz.facts.normalize import fact_hash
from liz.facts.queries import active_by_hash
from liz.facts.reconcile import ShortIds, add_all, ask_for_plan, resolve_plan
from liz.facts.settings import FactSettings
from liz.facts.shared_embedding import Seat
from liz.facts.storage import FactStorage, Nearest
from liz.facts.vectors import Vector, embed
from liz.facts.writes import Write, still_valid
from liz.llm import LLMClient
from liz.prompts.templates import PromptTemplates

logger = logging.getLogger(__name__)


async def learn_facts(
    extracted: Sequence[SourcedFact],
    context: WriteContext,
    *,
    storage: FactStorage,
    reads: async_sessionmaker[AsyncSession],
    llm: LLMClient,
    templates: PromptTemplates,
    settings: FactSettings,
    also: Sequence[ExtraStatement] = (),
    seat: Seat | None = None,
) -> list[FactEvent]:
    """Deduplicate, reconcile with the LLM and write one add's facts in one transaction,
    whether they came from one message or several (each fact added keeps its own
    ``source_memory_id``; a fact said twice is credited to the first message saying it).

    What it reads to plan goes through ``reads`` (beside the writer); the commit
    checks the plan again under the write lock and runs ``also`` after it. The new
    facts are embedded in ``seat``'s shared request, if given.
    """
    scope = context.scope
    unique: dict[str, SourcedFact] = {}
    # What is still true first: a text said, changed and said again is active.
    for found in sorted(extracted, key=lambda found: found.fact.changed_later):
        unique.setdefault(fact_hash(found.fact.text), found)
    async with reads() as session:
        known = await active_by_hash(session, scope, list(unique))
    # Exact duplicates never reach the LLM: they are reported with the stored id.
    events = [
        FactEvent(Event.NOOP, record.id, record.text, reason="exact duplicate of a stored fact")
        for record in known.values()
    ]
    fresh = [(digest, fact) for digest, fact in unique.items() if digest not in known]
    if not fresh:  # nothing to write: ``also`` in a transaction of its own
        if seat is not None:
            seat.leave()  # before the commit: the others need not wait for it
        return events + (await _commit(storage, [], {}, context, also) if also else [])
    texts = [found.fact.text for _, found in fresh]
    vectors = await (embed(llm, texts) if seat is None else seat.embed(llm, texts))
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
    # Before any session: a PostgreSQL index build takes a connection of its own.
    await storage.prepare_dimension(int(new_facts[0].vector.size))
    # What a later message of the round changed goes to the history as it was said,
    # first; only what is still true is reconciled with the stored facts.
    changed_later = {digest for digest, found in fresh if found.fact.changed_later}
    history = [fact for fact in new_facts if fact.hash in changed_later]
    new_facts = [fact for fact in new_facts if fact.hash not in changed_later]
    similar = await storage.similar(
        [
            Nearest(
                scope,
                fact.vector,
                llm.embedding_model,
                settings.reconcile_candidates,
                settings.reconcile_threshold,
            )
            for fact in new_facts
        ]
    )
    changes = add_all(history, "a later message changed it", retired=True)
    if not similar:
        changes += add_all(new_facts, "nothing similar was stored")
    else:
        shown = ShortIds(similar)
        plan = await ask_for_plan(llm, templates, shown, new_facts, size=settings.model_size)
        changes += resolve_plan(plan, new_facts, shown)
    text_vectors = {fact.text: fact.vector for fact in new_facts + history}
    missing = sorted(
        {c.text for c in changes if c.event in (Event.ADD, Event.UPDATE)} - set(text_vectors)
    )
    if missing:
        text_vectors.update(zip(missing, await embed(llm, missing), strict=True))
    events += await _commit(storage, changes, text_vectors, context, also)
    for change in changes:
        logger.debug("fact %s %s: %s", change.event.value, change.fact_id or "(new)", change.text)
    return events


async def _commit(
    storage: FactStorage,
    changes: Sequence[Change],
    vectors: dict[str, Vector],
    context: WriteContext,
    also: Sequence[ExtraStatement],
) -> list[FactEvent]:
    """Write a plan made before the transaction (:class:`PlanConflict` when a fact it
    changes changed meanwhile), then ``also``; what was done, in order."""
    ids = [c.fact_id for c in changes if c.fact_id and c.event is not Event.NOOP]
    hashes = [fact_hash(c.text) for c in changes if c.event in (Event.ADD, Event.UPDATE)]
    _, events = await storage.write(
        Write(context, still_valid(changes), vectors, ids, hashes, also)
    )
    return events
