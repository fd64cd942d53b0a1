"""The facts store's vocabulary: plain data and errors, no database objects, no I/O.

A *scope* is one (agent, user) pair; every fact belongs to one. An add extracts
:class:`NewFact`s, plans :class:`Change`s (the write plan) and reports
:class:`FactEvent`s; explicit :class:`FactOperation`s come back as
:class:`ItemResult`s; every change leaves a :class:`HistoryEntry`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints
from sqlalchemy import Executable

from liz.errors import LizError
from liz.facts.vectors import Vector

Scope = tuple[str, str]  # (agent id, user id)
# (fact id, similarity, text hash): the hash breaks ties the same way on every database.
Candidate = tuple[str, float, str]
ModelPair = tuple[str, int]  # (embedding model, dimension)
MAX_FACT_CHARS = 1000  # a fact is a sentence or two; longer text is not one fact


class Event(StrEnum):
    """What reconciliation does with one new fact."""

    ADD = "ADD"  # a new fact
    UPDATE = "UPDATE"  # an existing fact, same id, richer or changed text
    DELETE = "DELETE"  # an existing fact contradicted: retired, the new fact added
    NOOP = "NOOP"  # already known


@dataclass(frozen=True)
class Fact:
    """One fact about a user, as an agent knows it.

    ``created_at`` is when the system learned it and ``retired_at`` when it
    stopped believing it (``None``: still active); ``valid_from`` and
    ``invalid_from`` are when it became and stopped being true in the world,
    as far as the conversation tells.
    """

    id: str
    agent_id: str
    user_id: str
    text: str
    subject: str
    categories: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    valid_from: datetime
    invalid_from: datetime | None
    retired_at: datetime | None
    source_memory_id: str | None
    score: float | None = None

    @property
    def active(self) -> bool:
        return self.retired_at is None


@dataclass(frozen=True)
class FactEvent:
    """One change an ``add`` made (or, for NOOP, did not need to make)."""

    event: Event
    fact_id: str
    text: str
    old_text: str | None = None
    reason: str = ""


@dataclass(frozen=True)
class HistoryEntry:
    """One row of a fact's history: every change is kept, nothing is overwritten."""

    fact_id: str
    event: Event
    old_text: str | None
    new_text: str | None
    at: datetime
    actor: str
    reason: str


@dataclass(frozen=True)
class NewFact:
    """A fact extracted from a conversation, embedded, not stored yet."""

    text: str
    subject: str
    categories: tuple[str, ...]
    hash: str
    vector: Vector = field(compare=False, repr=False)
    # The message it was learned from (several are learned together in one round).
    source_memory_id: str | None = None


@dataclass(frozen=True)
class Exchange:
    """One message to learn facts from: what was said (a text said by the user, or
    ``{"role", "content"}`` dicts: the user's message and the reply) and its ``Memory`` id."""

    messages: str | Sequence[Mapping[str, str]]
    source_memory_id: str | None = None


@dataclass(frozen=True)
class Change:
    """One step of a write plan. ``fact_id`` names the existing fact for UPDATE, DELETE, NOOP."""

    event: Event
    text: str
    fact_id: str | None = None
    subject: str = "user"
    categories: tuple[str, ...] = ()
    reason: str = ""
    expected_updated_at: datetime | None = None  # the target as read; changed since = conflict
    # For a fact added: the message it was learned from, when it differs from the
    # write's (``WriteContext.source_memory_id``), as when several are learned together.
    source_memory_id: str | None = None
    # For a fact added: retired at once, a later message of the same round having
    # changed it ("I live in Paris" ... "I moved to Berlin"); it stays in the history.
    retired: bool = False


@dataclass(frozen=True)
class WriteContext:
    """Who writes to which scope, when, with which embedding model, for which message."""

    scope: Scope
    now: datetime
    actor: str  # "llm" (reconciliation), "api", "cli"
    model: str
    dialect: str
    source_memory_id: str | None = None


@dataclass(frozen=True)
class ExtraStatement:
    """A statement run in the facts' own transaction, after their write (the learning
    queue deletes its jobs so). ``expected_rows``: the rowcount it must have, or the
    whole transaction rolls back with :class:`ExtraStatementMismatch`."""

    statement: Executable | None = None
    expected_rows: int | None = None
    # Statements made when the transaction runs them, from what the work before found
    # (the token usage of the LLM calls the write needed).
    made_at_commit: Callable[[], Sequence[Executable]] | None = None


class ExtraStatementMismatch(Exception):
    """An :class:`ExtraStatement` touched another number of rows than expected; the
    transaction was rolled back."""


@dataclass(frozen=True)
class Stored:
    """What a write needs to know of a stored fact."""

    id: str
    text: str
    hash: str
    subject: str
    retired: bool
    updated_at: datetime | None


@dataclass
class Snapshot:
    """The scope's facts a write touches, as read under the write lock."""

    targets: dict[str, Stored]  # by id, active or retired
    by_hash: dict[str, Stored]  # active facts by the hash of their text


@dataclass(frozen=True)
class IndexedFact:
    """A fact a write added or re-embedded, as a storage's search structures need it."""

    id: str
    agent_id: str
    user_id: str
    text: str
    hash: str
    vector: Vector = field(repr=False)
    model: str
    dimension: int


@dataclass
class ChangeLog:
    """What one committed write changed, so a storage can update its cache in place."""

    added: list[IndexedFact] = field(default_factory=list)  # new, or new text of a fact
    removed: list[str] = field(default_factory=list)  # retired
    history_ids: list[int] = field(default_factory=list)


class FactOperation(BaseModel):
    """An explicit change asked for by a caller (``FactStore.apply``)."""

    model_config = ConfigDict(extra="forbid")

    op: Literal["add", "update", "delete"]
    id: str | None = None
    text: str | None = None
    subject: Annotated[str, StringConstraints(strip_whitespace=True, max_length=100)] = "user"
    categories: list[str] | None = None
    reason: str = ""


class ItemStatus(StrEnum):
    APPLIED = "applied"
    DUPLICATE = "duplicate"  # an exact duplicate of an existing fact: nothing written
    REFUSED = "refused"


@dataclass(frozen=True)
class ItemResult:
    """What ``apply`` did with one item of the batch, in the batch's order."""

    index: int
    op: str
    status: ItemStatus
    fact_id: str | None
    reason: str = ""


class PlanConflict(Exception):
    """A fact the plan changes was changed or retired meanwhile; plan again."""


class EmbeddingMismatchError(LizError):
    """Stored facts were embedded with another model or dimension than the query.

    Comparing vectors from two models gives meaningless similarities, so the
    search is refused; ``liz facts reindex`` re-embeds the scope.
    """

    status = 409
