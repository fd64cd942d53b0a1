"""What both vector/keyword indexes share: knowing which scopes changed since last look.

Every change to a fact writes a ``FactHistory`` row, so the highest history id
is a cheap, cross-process revision number; scopes with newer rows are stale.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from liz.memory.errors import EmbeddingMismatchError
from liz.memory.vectors import Vector

Scope = tuple[str, str]  # (agent id, user id)
# (fact id, similarity, text hash): the hash breaks ties the same way on every database,
# where ids (random uuids) would not.
Candidate = tuple[str, float, str]
T = TypeVar("T")


@dataclass(frozen=True)
class IndexedFact:
    """What an index needs to know of a fact it adds or replaces."""

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
    """What one committed write changed, so an index can update its cache in place."""

    added: list[IndexedFact] = field(default_factory=list)  # new, or new text of a fact
    removed: list[str] = field(default_factory=list)  # retired
    history_ids: list[int] = field(default_factory=list)


class FactIndex(Protocol):
    """Vector and keyword search over one scope's active facts, for one database kind."""

    async def vector_candidates(
        self,
        session: AsyncSession,
        scope: Scope,
        query: Vector,
        *,
        model: str,
        limit: int,
        threshold: float,
    ) -> list[Candidate]: ...

    async def keyword_candidates(
        self, session: AsyncSession, scope: Scope, terms: Sequence[str], *, limit: int
    ) -> dict[str, str]: ...

    async def similarities(
        self, session: AsyncSession, scope: Scope, ids: Sequence[str], query: Vector, *, model: str
    ) -> dict[str, float]: ...

    async def prepare_dimension(self, dimension: int) -> None:
        """Make ready to search vectors of ``dimension``; call it before opening the
        search's session, as it may need a connection of its own."""
        ...

    async def facts_added(self, session: AsyncSession, facts: Iterable[IndexedFact]) -> None: ...

    async def facts_removed(self, session: AsyncSession, fact_ids: Iterable[str]) -> None: ...

    def invalidate(self, scopes: Iterable[Scope]) -> None: ...

    def absorb(self, scope: Scope, log: ChangeLog) -> None:
        """Take in a write this process committed, instead of reloading the scope."""
        ...


class ScopeCache(Generic[T]):
    """Per-scope values, dropped when the scope's facts change (in any process)."""

    def __init__(self, max_scopes: int) -> None:
        # Each value with the history mark it was loaded at.
        self._values: OrderedDict[Scope, tuple[T, int]] = OrderedDict()
        self._max_scopes = max_scopes
        self._history_mark: int | None = None
        self._own: set[int] = set()  # history rows of writes this process already took in

    async def refresh(self, session: AsyncSession) -> None:
        """Forget scopes changed since the last call by others (another process)."""
        mark = (await session.execute(text('SELECT max(id) FROM "FactHistory"'))).scalar()
        mark = int(mark or 0)
        if self._history_mark is None or mark < self._history_mark:
            self._values.clear()
        elif mark > self._history_mark:
            changed = await session.execute(
                text('SELECT id, "agentId", "userId" FROM "FactHistory" WHERE id > :mark'),
                {"mark": self._history_mark},
            )
            self.invalidate({(row[1], row[2]) for row in changed if row[0] not in self._own})
        self._own = {own for own in self._own if own > mark}
        self._history_mark = mark

    def get(self, scope: Scope) -> T | None:
        entry = self._values.get(scope)
        if entry is None:
            return None
        self._values.move_to_end(scope)
        return entry[0]

    def put(self, scope: Scope, value: T, mark: int | None = None) -> None:
        """Keep ``value``; ``mark`` is the history mark it reflects (default: the latest)."""
        self._values[scope] = (value, (self._history_mark or 0) if mark is None else mark)
        self._values.move_to_end(scope)
        while len(self._values) > self._max_scopes:
            self._values.popitem(last=False)

    def taken_in(self, scope: Scope, log: ChangeLog) -> tuple[T, int] | None:
        """Note the write as ours; return the scope's entry if it predates the write."""
        self._own.update(log.history_ids)
        entry = self._values.get(scope)
        if entry is None or (log.history_ids and entry[1] >= max(log.history_ids)):
            return None  # not cached, or loaded after the commit: it has the write already
        return entry

    def invalidate(self, scopes: Iterable[Scope]) -> None:
        for scope in scopes:
            self._values.pop(scope, None)


ModelPair = tuple[str, int]  # (embedding model, dimension)

# Over all the scope's facts, retired ones too (reindex re-embeds those as well), so
# the index on (agentId, userId, embeddingModel, embeddingDim) answers it directly.
_BOUND = (
    'SELECT "embeddingModel", "embeddingDim" FROM "Fact" WHERE "agentId" = :agent '
    'AND "userId" = :user ORDER BY "embeddingModel" {0}, "embeddingDim" {0} LIMIT 1'
)


async def model_bounds(session: AsyncSession, scope: Scope) -> tuple[ModelPair, ...]:
    """The smallest and largest (model, dimension) among the scope's facts.

    Two index lookups, cheap at any size; equal bounds mean every fact shares one model.
    A re-embedding by another process changes them, which is how caches notice it.
    """
    result = await session.execute(
        text(
            f"SELECT * FROM ({_BOUND.format('ASC')}) AS low "
            f"UNION ALL SELECT * FROM ({_BOUND.format('DESC')}) AS high"
        ),
        {"agent": scope[0], "user": scope[1]},
    )
    return tuple((row[0], int(row[1])) for row in result)


async def check_models(
    session: AsyncSession, scope: Scope, bounds: tuple[ModelPair, ...], model: str, dimension: int
) -> None:
    """Refuse a query whose embedding model or dimension differs from the stored facts'."""
    if all(pair == (model, dimension) for pair in bounds):
        return
    result = await session.execute(
        text(
            'SELECT DISTINCT "embeddingModel", "embeddingDim" FROM "Fact" WHERE "agentId" = '
            ':agent AND "userId" = :user'
        ),
        {"agent": scope[0], "user": scope[1]},
    )
    others = sorted(
        (row[0], int(row[1])) for row in result if (row[0], int(row[1])) != (model, dimension)
    )
    found = ", ".join(f"{name} (dimension {dim})" for name, dim in others)
    agent_id, user_id = scope
    raise EmbeddingMismatchError(
        f"facts of agent {agent_id!r} and user {user_id!r} were embedded with {found}, but "
        f"this query uses {model} (dimension {dimension}); vectors from different models "
        f"cannot be compared: run `liz memory reindex --agent {agent_id} --user {user_id}` "
        "to re-embed them with the current LIZ_EMBEDDING_MODEL"
    )


# Rows fetched past the limit, to see whether the limit cuts through a group of ties.
TIE_MARGIN = 8


def deterministic_top(found: Iterable[Candidate], limit: int, exhausted: bool) -> list[Candidate]:
    """The best ``limit`` of the ``limit + TIE_MARGIN`` most similar facts, the same on
    every database.

    Facts with exactly equal similarity come back from an index in no set order, so
    when the limit cuts through such a group and the group may go on past what was
    fetched (``exhausted`` is False and the last fetched fact still ties), the group
    is left out entirely: the result is then shorter, but never depends on which of
    the tied facts an index happened to visit first. Real embeddings almost never
    tie; exact ties come from bag-of-words vectors such as the scripted server's.
    """
    ranked = sorted(found, key=lambda candidate: (-candidate[1], candidate[2]))
    if len(ranked) <= limit:
        return ranked
    boundary = ranked[limit - 1][1]
    if exhausted or ranked[-1][1] < boundary:
        return ranked[:limit]
    return [candidate for candidate in ranked if candidate[1] > boundary]
