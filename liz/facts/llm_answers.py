"""What the LLM must answer (extraction, reconciliation), as pydantic models: validated
before anything is written.

Every field is required (nullable where it may be empty) so the schemas are
valid for strict json_schema output as well as for validated plain JSON.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from liz.facts.domain import MAX_FACT_CHARS, Event

FactText = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_FACT_CHARS)
]
Category = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40)]
Categories = Annotated[list[Category], Field(min_length=2, max_length=5)]


class ExtractedFact(BaseModel):
    """One atomic fact, stated on its own so it reads correctly without the conversation."""

    model_config = ConfigDict(extra="forbid")

    # The number of the message (as the prompt lists them) the fact was learned from.
    # The schema sent requires it (strict mode drops the default); an answer without it
    # (a lax model, a test's older script) is still taken, the fact credited to the
    # latest message. Docstrings and descriptions here are part of what the model reads.
    message: int | None = Field(
        default=None, description="number of the message the fact was learned from"
    )
    text: FactText
    subject: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
    categories: Categories
    # What an earlier message said and a later one of the same prompt changed or took
    # back: kept in the facts' history, never active.
    changed_later: bool = Field(
        default=False, description="true when a later message changed or took back this fact"
    )


class ExtractedFacts(BaseModel):
    """The extraction answer; an empty list when nothing is worth keeping."""

    model_config = ConfigDict(extra="forbid")

    facts: list[ExtractedFact]


class FactDecision(BaseModel):
    """The LLM's decision for one new fact, naming existing facts by their short ids."""

    model_config = ConfigDict(extra="forbid")

    new_fact: int = Field(description="number of the new fact, as listed")
    event: Event
    id: int | None = Field(description="short id of the existing fact; null for ADD")
    text: str | None = Field(description="text to store; null for NOOP")
    categories: list[Category] | None = Field(description="2 to 5 categories; null for NOOP")
    reason: str

    @model_validator(mode="after")
    def _fields_match_event(self) -> FactDecision:
        if self.event is not Event.ADD and self.id is None:
            raise ValueError(f"{self.event.value} needs the id of an existing fact")
        if self.event is Event.NOOP:
            return self
        if not (self.text or "").strip():
            raise ValueError(f"{self.event.value} needs a non-empty text")
        count = len(self.categories or [])
        if not 2 <= count <= 5:
            raise ValueError(f"{self.event.value} needs 2 to 5 categories, got {count}")
        return self


class ReconcilePlan(BaseModel):
    """The reconcile answer: one decision per new fact (more for several contradictions)."""

    model_config = ConfigDict(extra="forbid")

    decisions: list[FactDecision]
