"""The PostgreSQL index's memory: the facts of small scopes, with their vectors, in process.

A scope small enough to be compared in full (liz.facts.index.postgres) is compared
here, as SQLite's scopes are (one matrix-vector product), so a search needs one
round trip, sent while the query's embedding is on its way, and none after it.

The copy is kept current by the scope's history. Every change to a fact writes a
``FactHistory`` row, and every writer of a scope holds the scope's advisory lock from
before its rows are numbered until it commits (liz.facts.snapshot, liz.facts.pg_commit):
so the scope's history ids become visible in increasing order, and a copy that holds
the scope as of its newest history id (its *mark*) lacks exactly the changes in the
rows after it. Each search's first read carries the scope's newest id (the
``mark`` of liz.facts.pg_search's plan); a copy behind it reads the facts those rows
name, in one statement, and a scope not held is read whole.

Not seen: ``liz facts reindex`` writes no history row; the copy then keeps the vectors
it has until the process restarts, which is what the model they came from gives
(reindexing to another model changes the scope's model, and the copy is read again).
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from liz.db.driver import Driver, Statement
from liz.facts.domain import Fact, Scope
from liz.facts.index.protocol import ModelPair
from liz.facts.index.sqlite_cache import ScopeVectors
from liz.facts.queries import FACT_COLUMN_NAMES, fact_from_row
from liz.facts.vectors import Vector

# The vectors of all scopes held, at most (facts x dimensions): 64 MB of float32.
MAX_VALUES = 16_000_000
# A stored vector this close to unit length is taken as it is (float32's own noise).
UNIT_TOLERANCE = 1e-5

_SCOPE = '"agentId" = $1 AND "userId" = $2'
# Each row: the mark, the fact's columns (liz.facts.queries.fact_from_row), its text's
# hash, its vector, model and dimension.
_COLUMNS = f'{FACT_COLUMN_NAMES}, hash, embedding, "embeddingModel", "embeddingDim"'
_FIELDS = len(FACT_COLUMN_NAMES.split(", "))
_MARK = f'(SELECT coalesce(max(id), 0) FROM "FactHistory" WHERE {_SCOPE})'
_LOAD = Statement.of(
    f'SELECT {_MARK}, {_COLUMNS} FROM "Fact" WHERE {_SCOPE} AND "retiredAt" IS NULL'
)
_CHANGED = Statement.of(
    f'WITH changed AS (SELECT "factId", id FROM "FactHistory" WHERE {_SCOPE} AND id > $3) '
    f'SELECT (SELECT max(id) FROM changed), {_COLUMNS} FROM "Fact" '
    'WHERE id IN (SELECT "factId" FROM changed)'
)


@dataclass
class ScopeFacts:
    """One scope's active facts as of history id ``mark``, with their vectors."""

    mark: int
    pair: ModelPair  # the embedding model and dimension of every vector here
    vectors: ScopeVectors
    facts: dict[str, Fact]
    read_at: float  # the event loop's time when the read it is current to was sent

    @property
    def values(self) -> int:
        return len(self.vectors.ids) * self.pair[1]


@dataclass(frozen=True)
class _Row:
    """One row of :data:`_LOAD` or :data:`_CHANGED`."""

    mark: int
    fact: Fact
    hash: str
    vector: Any
    pair: ModelPair

    @classmethod
    def of(cls, row: Sequence[Any]) -> _Row:
        fact = fact_from_row(row[1 : 1 + _FIELDS])
        rest = row[1 + _FIELDS :]
        return cls(int(row[0]), fact, rest[0], rest[1], (rest[2], int(rest[3])))


class PostgresScopeCache:
    """The scopes of small size searched lately, least recently used dropped first."""

    def __init__(self, max_values: int = MAX_VALUES) -> None:
        """``max_values``: facts x dimensions held at most; 0 holds none (every search
        compares in the database)."""
        self._max_values = max_values
        self._scopes: OrderedDict[Scope, ScopeFacts] = OrderedDict()
        self._reading: weakref.WeakValueDictionary[Scope, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    async def current(
        self, db: Driver, scope: Scope, mark: int, active: int, pair: ModelPair, sent: float
    ) -> ScopeFacts | None:
        """The scope's facts, as new as a read sent at loop time ``sent`` that saw history
        ``mark`` and ``active`` facts of ``pair``; read from the database if need be.
        None when none can be held (``max_values`` 0) or these cannot (not all of ``pair``)."""
        if not self._max_values:
            return None
        held = self._scopes.get(scope)
        if held is not None and _current(held, mark, active, pair, sent):
            self._scopes.move_to_end(scope)
            return held
        lock = self._reading.get(scope)
        if lock is None:
            lock = self._reading[scope] = asyncio.Lock()
        async with lock:  # one read of a scope at a time; the others use what it read
            held = self._scopes.get(scope)
            if held is not None and _current(held, mark, active, pair, sent):
                return held
            began = asyncio.get_running_loop().time()
            if held is None or held.pair != pair or held.mark >= mark:
                # Not held, another model, or behind what the process saw (a restored
                # database; or as new but with another count): read it whole.
                found = await _load(db, scope, began)
            else:
                found = await _changes(db, scope, held, began)
            if found is None or found.pair != pair:
                self.invalidate([scope])
                return None
            self._keep(scope, found)
            return found

    def _keep(self, scope: Scope, found: ScopeFacts) -> None:
        self._scopes[scope] = found
        self._scopes.move_to_end(scope)
        total = sum(held.values for held in self._scopes.values())
        while total > self._max_values and self._scopes:
            _, dropped = self._scopes.popitem(last=False)
            total -= dropped.values

    def invalidate(self, scopes: Iterable[Scope]) -> None:
        for scope in scopes:
            self._scopes.pop(scope, None)


def _current(held: ScopeFacts, mark: int, active: int, pair: ModelPair, sent: float) -> bool:
    """Whether ``held`` is at least as new as the read sent at ``sent`` that saw ``mark``."""
    if held.pair != pair:
        return False
    if held.mark == mark:
        return len(held.facts) == active
    # Newer than that read: fine if read after it was sent (another search's refresh);
    # a mark that went down otherwise means a database restored from a copy.
    return held.mark > mark and held.read_at >= sent


async def _load(db: Driver, scope: Scope, began: float) -> ScopeFacts | None:
    rows = [_Row.of(row) for row in await db.fetch(_LOAD, scope[0], scope[1])]
    pairs = {row.pair for row in rows}
    if len(pairs) != 1:
        return None  # none left, or mixed models: the database's search says which
    (pair,) = pairs
    vectors = ScopeVectors(
        [row.fact.id for row in rows],
        [row.hash for row in rows],
        _matrix([row.vector for row in rows], pair[1]),
        (pair, pair),
    )
    facts = {row.fact.id: row.fact for row in rows}
    return ScopeFacts(rows[0].mark, pair, vectors, facts, began)


async def _changes(db: Driver, scope: Scope, held: ScopeFacts, began: float) -> ScopeFacts | None:
    """``held`` with the facts changed since its mark read again (in place, at once)."""
    rows = [_Row.of(row) for row in await db.fetch(_CHANGED, scope[0], scope[1], held.mark)]
    if not rows:
        return None  # the rows the plan saw are gone: read the scope whole
    kept = [
        row for row in rows if row.fact.active and (row.fact.agent_id, row.fact.user_id) == scope
    ]
    if any(row.pair != held.pair for row in kept):
        return None  # another model: read whole, and refused, next time
    for row in rows:
        held.vectors.remove(row.fact.id)
        held.facts.pop(row.fact.id, None)
    for row in kept:
        held.vectors.add(row.fact.id, row.hash, _matrix([row.vector], held.pair[1])[0])
        held.facts[row.fact.id] = row.fact
    held.mark = rows[0].mark
    held.read_at = began
    return held


def _matrix(vectors: Sequence[Any], dimension: int) -> Vector:
    """pgvector's values (read in its binary form: liz.facts.pg_vectors) as float32 rows
    of unit length. PostgreSQL compares by cosine, which for those is their dot product
    with the query; liz stores them so (liz.facts.vectors), and they are kept bit for bit,
    as SQLite's are, so both databases round a similarity alike. A row written some
    other way is scaled to unit length here."""
    if not vectors:
        return np.zeros((0, dimension), dtype=np.float32)
    matrix = np.stack([vector.to_numpy() for vector in vectors]).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1)
    scaled = (np.abs(norms - 1) > UNIT_TOLERANCE) & (norms > 0)  # a zero vector stays zero
    matrix[scaled] /= norms[scaled, np.newaxis]
    return matrix
