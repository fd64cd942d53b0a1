"""The contract both fact indexes keep (SQLite, PostgreSQL) and what makes them agree:
the embedding-model check and one tie-breaking rule."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from liz.facts.domain import EmbeddingMismatchError, Scope
from liz.facts.vectors import Vector

# (fact id, similarity, text hash): the hash breaks ties the same way on every database,
# where ids (random uuids) would not.
Candidate = tuple[str, float, str]


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
        query: Vector | Awaitable[Vector],
        *,
        model: str,
        limit: int,
        threshold: float,
    ) -> list[Candidate]:
        """The scope's active facts most similar to ``query``, at least ``threshold``
        similar. ``query`` may still be on its way (an awaitable that can be awaited
        more than once, such as a future): an index may read what it needs first."""
        ...

    async def term_matches(
        self, session: AsyncSession, scope: Scope, terms: Sequence[str], *, cap: int
    ) -> dict[str, dict[str, str]]:
        """For each term found in at most ``cap`` of the scope's active facts, those facts'
        ids and texts; a term in more is left out. Reads at most ``cap + 1`` facts per term,
        however large the scope."""
        ...

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


ModelPair = tuple[str, int]  # (embedding model, dimension)

# Over all the scope's facts, retired ones too (reindex re-embeds those as well), so
# the index on (agentId, userId, embeddingModel, embeddingDim) answers it directly.
_BOUND = (
    'SELECT "embeddingModel", "embeddingDim" FROM "Fact" WHERE "agentId" = :agent '
    'AND "userId" = :user ORDER BY "embeddingModel" {0}, "embeddingDim" {0} LIMIT 1'
)
_BOUNDS = text(
    f"SELECT * FROM ({_BOUND.format('ASC')}) AS low "
    f"UNION ALL SELECT * FROM ({_BOUND.format('DESC')}) AS high"
)


async def model_bounds(session: AsyncSession, scope: Scope) -> tuple[ModelPair, ...]:
    """The smallest and largest (model, dimension) among the scope's facts.

    Two index lookups, cheap at any size; equal bounds mean every fact shares one model.
    A re-embedding by another process changes them, which is how caches notice it.
    """
    result = await session.execute(_BOUNDS, {"agent": scope[0], "user": scope[1]})
    return tuple((row[0], int(row[1])) for row in result)


# Every (model, dimension) pair of the scope, for the error when they disagree.
DISTINCT_MODELS = (
    'SELECT DISTINCT "embeddingModel", "embeddingDim" FROM "Fact" WHERE "agentId" = :agent '
    'AND "userId" = :user'
)


def models_agree(bounds: Iterable[ModelPair], model: str, dimension: int) -> bool:
    """Whether every stored fact (as ``bounds`` say) was embedded as the query was."""
    return all(pair == (model, dimension) for pair in bounds)


async def check_models(
    session: AsyncSession, scope: Scope, bounds: tuple[ModelPair, ...], model: str, dimension: int
) -> None:
    """Refuse a query whose embedding model or dimension differs from the stored facts'."""
    if models_agree(bounds, model, dimension):
        return
    result = await session.execute(text(DISTINCT_MODELS), {"agent": scope[0], "user": scope[1]})
    raise models_mismatch(scope, [(row[0], int(row[1])) for row in result], model, dimension)


def models_mismatch(
    scope: Scope, stored: Iterable[ModelPair], model: str, dimension: int
) -> EmbeddingMismatchError:
    """The error :func:`check_models` raises, given the scope's distinct ``stored`` pairs."""
    others = sorted(pair for pair in stored if pair != (model, dimension))
    found = ", ".join(f"{name} (dimension {dim})" for name, dim in others)
    agent_id, user_id = scope
    return EmbeddingMismatchError(
        f"facts of agent {agent_id!r} and user {user_id!r} were embedded with {found}, but "
        f"this query uses {model} (dimension {dimension}); vectors from different models "
        f"cannot be compared: run `liz facts reindex --agent {agent_id} --user {user_id}` "
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


async def matches_per_term(
    session: AsyncSession,
    terms: Sequence[str],
    *,
    cap: int,
    one_term: str,
    bind: Callable[[str], str],
    values: Mapping[str, object] | None = None,
) -> dict[str, dict[str, str]]:
    """``term_matches`` in one statement (:func:`terms_statement`); ``bind`` makes each
    term's value. Terms are letters and digits only (liz.facts.normalize), so ``bind``
    may quote them."""
    if not terms:
        return {}
    bound: dict[str, object] = {**(values or {}), "most": cap + 1}
    bound.update((f"term{number}", bind(term)) for number, term in enumerate(terms))
    result = await session.execute(text(terms_statement(len(terms), one_term)), bound)
    return terms_found(result, terms, cap)


def terms_statement(count: int, one_term: str) -> str:
    """``count`` terms' matches as rows of (term number, fact id, text): ``one_term``
    selects (fact id, text) for the term bound as ``:term{n}``, each with ``LIMIT :most``
    (one past the cap, to see a term that passes it)."""
    return " UNION ALL ".join(
        f"SELECT {number}, * FROM ({one_term.format(n=number)} LIMIT :most) AS term{number}"
        for number in range(count)
    )


def terms_found(
    rows: Iterable[Sequence[Any]], terms: Sequence[str], cap: int
) -> dict[str, dict[str, str]]:
    """The rows of :func:`terms_statement` by term; a term found in more than ``cap``
    facts is left out."""
    found: dict[str, dict[str, str]] = {term: {} for term in terms}
    for number, fact_id, fact_text in rows:
        found[terms[number]][fact_id] = fact_text
    return {term: hits for term, hits in found.items() if len(hits) <= cap}
