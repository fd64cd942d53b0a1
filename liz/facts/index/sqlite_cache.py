"""The SQLite index's memory: each scope's active vectors as one float32 matrix.

A search is one matrix-vector product over the scope's matrix. Writes this
process commits are patched into the matrix in place, in time independent of
the scope's size; writes by other processes drop the scope, and the next search
reloads it.

Searches read through read-only sessions that run beside the writer, each on its
own snapshot, so a load can finish after a write it does not hold was committed
and patched in. Such a load serves its own search but is never kept: a load is
kept only if its snapshot's history mark is the newest this process has seen
(else another process's write may be missing) and at least every own write to
the scope taken in so far (else that write is missing).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from liz.facts.domain import Scope
from liz.facts.index.protocol import ChangeLog, ModelPair
from liz.facts.vectors import Vector

MIN_SPARE_ROWS = 64
_HISTORY_MARK = text('SELECT max(id) FROM "FactHistory"')
_HISTORY_SINCE = text('SELECT id, "agentId", "userId" FROM "FactHistory" WHERE id > :mark')


class ScopeVectors:
    """One scope's active facts: ids, text hashes and unit vectors, row by row.

    Rows are in no meaningful order (rankings break ties by hash). An added fact
    takes a spare row; a removed one is overwritten by the last row. The matrix
    keeps a quarter of its size spare, so growing it copies rarely.
    """

    def __init__(
        self, ids: list[str], hashes: list[str], matrix: Vector, bounds: tuple[ModelPair, ...]
    ) -> None:
        self.ids = ids
        self.hashes = hashes
        self.rows = {fact_id: row for row, fact_id in enumerate(ids)}
        self.bounds = bounds  # see protocol.model_bounds
        self._storage = _with_spare(matrix, len(ids))

    @property
    def matrix(self) -> Vector:
        """One unit vector per row (a view: valid until the next change)."""
        return self._storage[: len(self.ids)]

    def add(self, fact_id: str, digest: str, vector: Vector) -> None:
        size = len(self.ids)
        if size == len(self._storage):
            self._storage = _with_spare(self._storage, size)
        self._storage[size] = vector
        self.ids.append(fact_id)
        self.hashes.append(digest)
        self.rows[fact_id] = size

    def remove(self, fact_id: str) -> None:
        row = self.rows.pop(fact_id, None)
        if row is None:
            return
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            self._storage[row] = self._storage[last]
            self.ids[row] = moved
            self.hashes[row] = self.hashes[last]
            self.rows[moved] = row
        self.ids.pop()
        self.hashes.pop()


def _with_spare(matrix: Vector, size: int) -> Vector:
    """A copy of ``matrix``'s first ``size`` rows with room for a quarter more."""
    spare = np.empty((size + max(size // 4, MIN_SPARE_ROWS), matrix.shape[1]), dtype=np.float32)
    spare[:size] = matrix[:size]
    return spare


class ScopeCache:
    """Per-scope vectors, dropped when another process changes the scope's facts.

    Every change to a fact writes a ``FactHistory`` row, so the highest history id
    is a cheap, cross-process revision number; scopes with newer rows are stale,
    unless the rows are this process's own writes, which it patched in already.
    """

    def __init__(self, max_scopes: int) -> None:
        # Each value with the history mark it was loaded at.
        self._values: OrderedDict[Scope, tuple[ScopeVectors, int]] = OrderedDict()
        self._max_scopes = max_scopes
        self._history_mark: int | None = None
        self._own: set[int] = set()  # history rows of writes this process already took in
        # The newest history row of each scope's own writes newer than the history mark.
        self._own_newest: dict[Scope, int] = {}
        self._refreshing = asyncio.Lock()

    async def refresh(self, session: AsyncSession) -> int:
        """Forget scopes changed by others (another process) up to this session's
        snapshot; return the snapshot's history mark, which :meth:`put` takes."""
        # One at a time: each reads the rows after the mark the previous one left.
        async with self._refreshing:
            mark = int((await session.execute(_HISTORY_MARK)).scalar() or 0)
            if self._history_mark is None:
                self._values.clear()
            elif mark > self._history_mark:
                changed = await session.execute(_HISTORY_SINCE, {"mark": self._history_mark})
                self.invalidate({(row[1], row[2]) for row in changed if row[0] not in self._own})
            else:
                # Nothing new, or an older snapshot than the last refresh's (history
                # rows are never deleted, so a lower mark means an older snapshot).
                return mark
            self._own = {own for own in self._own if own > mark}
            self._own_newest = {s: own for s, own in self._own_newest.items() if own > mark}
            self._history_mark = mark
            return mark

    def get(self, scope: Scope) -> ScopeVectors | None:
        entry = self._values.get(scope)
        if entry is None:
            return None
        self._values.move_to_end(scope)
        return entry[0]

    def put(self, scope: Scope, value: ScopeVectors, mark: int) -> None:
        """Keep ``value``, read on a snapshot at history ``mark`` (from :meth:`refresh`),
        unless that snapshot may miss a write: another process's that a later refresh
        has seen, or one this process committed and took in."""
        if mark != self._history_mark or self._own_newest.get(scope, 0) > mark:
            return
        self._values[scope] = (value, mark)
        self._values.move_to_end(scope)
        while len(self._values) > self._max_scopes:
            self._values.popitem(last=False)

    def absorb(self, scope: Scope, log: ChangeLog) -> None:
        """Patch a write this process committed into the scope's vectors, if cached."""
        self._own.update(log.history_ids)
        if log.history_ids:
            newest = max(log.history_ids)
            self._own_newest[scope] = max(newest, self._own_newest.get(scope, 0))
        entry = self._values.get(scope)
        if entry is None or (log.history_ids and entry[1] >= max(log.history_ids)):
            return  # not cached, or loaded after the commit: it has the write already
        cached = entry[0]
        pairs = set(cached.bounds) | {(fact.model, fact.dimension) for fact in log.added}
        if len(pairs) > 1:
            self.invalidate([scope])  # mixed models: let the next search reload and refuse
            return
        for fact_id in log.removed:
            cached.remove(fact_id)
        for fact in log.added:
            cached.remove(fact.id)  # an update: its old vector goes
            cached.add(fact.id, fact.hash, fact.vector)
        cached.bounds = (pairs.pop(),) * 2 if pairs else ()

    def invalidate(self, scopes: Iterable[Scope]) -> None:
        for scope in scopes:
            self._values.pop(scope, None)
