"""Reconciliation: ask the LLM what new facts change, then turn its decisions into changes
that can never lose or corrupt a fact.

The LLM names existing facts by short ids only. Its answer is then checked:
an id it was not shown is ignored (and logged); a fact about another subject
is never changed or retired for a contradiction; a contradiction always retires
the old fact *and* adds the new one; a new fact nobody decided about is added.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from liz.facts.domain import Change, Event, Fact, NewFact
from liz.facts.llm_answers import FactDecision, ReconcilePlan
from liz.facts.normalize import normalize_subject
from liz.llm import LLMClient, Size
from liz.prompts.templates import PromptTemplates

logger = logging.getLogger(__name__)


async def ask_for_plan(
    llm: LLMClient,
    templates: PromptTemplates,
    shown: ShortIds,
    new_facts: Sequence[NewFact],
    *,
    size: Size,
) -> ReconcilePlan:
    """The LLM's decisions on ``new_facts``, given the similar stored facts ``shown``."""
    prompt = templates.render(
        "facts_reconcile.j2",
        existing=shown.numbered(),
        new_facts=list(enumerate(new_facts, start=1)),
    )
    return await llm.structured(prompt, ReconcilePlan, size=size)


def add_all(new_facts: Sequence[NewFact], reason: str, *, retired: bool = False) -> list[Change]:
    """Changes adding every new fact as extracted (nothing similar was stored), or,
    ``retired``, straight to the history (a later message changed them)."""
    return [
        Change(
            Event.ADD,
            fact.text,
            subject=fact.subject,
            categories=fact.categories,
            reason=reason,
            source_memory_id=fact.source_memory_id,
            retired=retired,
        )
        for fact in new_facts
    ]


def resolve_plan(
    plan: ReconcilePlan, new_facts: Sequence[NewFact], shown: ShortIds
) -> list[Change]:
    """The changes the plan asks for, after every safety rule; see the module docstring."""
    for decision in plan.decisions:
        if not 1 <= decision.new_fact <= len(new_facts):
            logger.warning(
                "reconcile: ignored a decision on new fact %d, which was not listed",
                decision.new_fact,
            )
    claimed: set[str] = set()
    changes: list[Change] = []
    for number, new in enumerate(new_facts, start=1):
        decisions = [d for d in plan.decisions if d.new_fact == number]
        changes.extend(_resolve_one(new, decisions, shown, claimed))
    return changes


def _resolve_one(
    new: NewFact, decisions: Sequence[FactDecision], shown: ShortIds, claimed: set[str]
) -> list[Change]:
    retired: list[tuple[Fact, FactDecision]] = []
    updated: tuple[Fact, FactDecision] | None = None
    known: tuple[Fact, FactDecision] | None = None
    added: FactDecision | None = None
    for decision in decisions:
        if decision.event is Event.ADD:
            added = added or decision
            continue
        target = shown.resolve(decision.id)
        if target is None:
            logger.warning(
                "reconcile: ignored %s on id %s, which the model was not shown",
                decision.event.value,
                decision.id,
            )
            continue
        if decision.event is Event.NOOP:
            known = known or (target, decision)
            continue
        if target.id in claimed:
            logger.warning("reconcile: ignored a second change to fact %s", target.id)
            continue
        if normalize_subject(target.subject) != normalize_subject(new.subject):
            logger.warning(
                "reconcile: refused %s of fact %s: it is about %r, the new fact about %r",
                decision.event.value,
                target.id,
                target.subject,
                new.subject,
            )
            continue
        if decision.event is Event.UPDATE and updated is None:
            updated = (target, decision)
            claimed.add(target.id)
        elif decision.event is Event.DELETE:
            retired.append((target, decision))
            claimed.add(target.id)
    changes = [
        Change(
            Event.DELETE,
            target.text,
            fact_id=target.id,
            subject=target.subject,
            reason=decision.reason or "contradicted by a new fact",
            expected_updated_at=target.updated_at,
        )
        for target, decision in retired
    ]
    if updated is not None:
        target, decision = updated
        changes.append(
            Change(
                Event.UPDATE,
                (decision.text or new.text).strip(),
                fact_id=target.id,
                subject=target.subject,
                categories=tuple(decision.categories or new.categories),
                reason=decision.reason,
                expected_updated_at=target.updated_at,
                source_memory_id=new.source_memory_id,
            )
        )
    elif retired or added is not None or known is None:
        if not (retired or added):
            logger.info("reconcile: no usable decision for new fact %r; adding it", new.text)
        source = added or (retired[0][1] if retired else None)
        changes.append(
            Change(
                Event.ADD,
                ((source.text if source else None) or new.text).strip(),
                subject=new.subject,
                categories=tuple((source.categories if source else None) or new.categories),
                reason=(source.reason if source else "") or "new information",
                source_memory_id=new.source_memory_id,
            )
        )
    else:
        target, decision = known
        changes.append(Change(Event.NOOP, target.text, fact_id=target.id, reason=decision.reason))
    return changes


class ShortIds:
    """Numbers the facts shown to the LLM 1, 2, 3 ... and maps the numbers back; a
    number never shown maps to None."""

    def __init__(self, facts: Iterable[Fact]) -> None:
        self._facts = list({fact.id: fact for fact in facts}.values())  # each fact once

    def numbered(self) -> Sequence[tuple[int, Fact]]:
        return list(enumerate(self._facts, start=1))

    def resolve(self, number: int | None) -> Fact | None:
        """The fact shown under ``number``, or None when no such number was shown."""
        if number is None or not 1 <= number <= len(self._facts):
            return None
        return self._facts[number - 1]
