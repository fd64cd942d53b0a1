"""The SQLite index's memory: each scope's active vectors as one float32 matrix.

A search is one matrix-vector product over the scope's matrix. Writes this
process commits are patched into the matrix in place, in time independent of
the scope's size; writes by other processes drop the scope, and the next search
reloads it; a database file replaced by a copy (an older one, or another
database's) drops every scope (liz.facts.index.sqlite_history says how it shows).

Searches read through read-only sessions that run beside the writer, each on its
own snapshot, so a load can finish after a write it does not hold was committed
and patched in. Such a load serves its own search but is never kept: a load is
kept only if its snapshot's history mark is the newest this process has seen
(else another process's write may be missing) and at least every own write to
the scope taken in so far (else that write is missing).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from liz.facts.domain import Scope
from liz.facts.index.protocol import ChangeLog, ModelPair
from liz.facts.index.sqlite_bits import SignBits
from liz.facts.index.sqlite_history import History, RowStamp
from liz.facts.vectors import HAS_BIT_COUNT, Vector, similarities_to

MIN_SPARE_ROWS = 64
# Scopes with up to this many numbers (facts x dimensions, 16 MB) are scanned exactly.
EXACT_SCAN_VALUES = 4_000_000
# Above it, this many times the rows asked for are scored exactly after the bit pass,
# for vectors of at least MIN_BIT_DIMENSIONS: with fewer, signs say too little (at 256,
# a bit pass missed rows of the exact top in half the searches of clustered vectors).
OVERSAMPLE = 20
MIN_BIT_DIMENSIONS = 1024
MIN_CANDIDATES = 1000
GATHER_ROWS = 64


class ScopeVectors:
    """One scope's active facts: ids, text hashes and unit vectors, row by row.

    Rows are in no meaningful order (rankings break ties by hash). An added fact
    takes a spare row; a removed one is overwritten by the last row. The matrix
    keeps a quarter of its size spare, so growing it copies rarely. Beside it, each
    row's sign bits (1/32 of its size), for the first pass of a search in a large scope.
    """

    def __init__(
        self, ids: list[str], hashes: list[str], matrix: Vector, bounds: tuple[ModelPair, ...]
    ) -> None:
        self.ids = ids
        self.hashes = hashes
        self.rows = {fact_id: row for row, fact_id in enumerate(ids)}
        self.bounds = bounds  # see protocol.model_bounds
        self._storage = _with_spare(matrix, len(ids))
        # Sign bits only where a search uses them (see nearest).
        self._bits: SignBits | None = None
        if matrix.shape[1] >= MIN_BIT_DIMENSIONS and HAS_BIT_COUNT:
            self._bits = SignBits(matrix, len(ids), len(self._storage))

    @property
    def matrix(self) -> Vector:
        """One unit vector per row (a view: valid until the next change)."""
        return self._storage[: len(self.ids)]

    def nearest(self, query: Vector, count: int) -> tuple[npt.NDArray[np.intp], Vector]:
        """Rows holding the ``count`` highest similarities to ``query`` (more when
        cheaper, all of them in a small scope) and their similarities, in no order.

        A matrix of up to ``EXACT_SCAN_VALUES`` numbers, or of vectors shorter than
        ``MIN_BIT_DIMENSIONS``, is scanned whole. A larger scan is bound by memory
        speed (100k facts x 1536 dimensions is 600 MB, 45 ms), so rows are first
        ranked by how many sign bits differ from the query's (20 MB read), and only
        the ``OVERSAMPLE`` x ``count`` closest are scored: the similarities returned
        are exact, the choice of rows is not guaranteed to be (bench/facts_recall.py
        measures how often it differs from the exact scan's).
        """
        size = len(self.ids)
        candidates = max(count * OVERSAMPLE, MIN_CANDIDATES)
        if self._bits is None or size * query.size <= EXACT_SCAN_VALUES or size <= candidates:
            return np.arange(size), similarities_to(self.matrix, query)
        distances = self._bits.distances(query, size)
        rows = np.sort(np.argpartition(distances, candidates - 1)[:candidates])
        return rows, self._similarities_of(rows, query)

    def _similarities_of(self, rows: npt.NDArray[np.intp], query: Vector) -> Vector:
        # A block of rows at a time: copied out of the matrix, a block stays in the CPU's
        # cache until it is scored (all candidates at once took half as long again).
        found = np.empty(len(rows), dtype=np.float32)
        for start in range(0, len(rows), GATHER_ROWS):
            block = rows[start : start + GATHER_ROWS]
            found[start : start + len(block)] = similarities_to(self._storage[block], query)
        return found

    def add(self, fact_id: str, digest: str, vector: Vector) -> None:
        size = len(self.ids)
        if size == len(self._storage):
            self._storage = _with_spare(self._storage, size)
            if self._bits is not None:
                self._bits.grown(len(self._storage))
        self._storage[size] = vector
        if self._bits is not None:
            self._bits.set(size, vector)
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
            if self._bits is not None:
                self._bits.move(last, row)
            self.ids[row] = moved
            self.hashes[row] = self.hashes[last]
            self.rows[moved] = row
        self.ids.pop()
        self.hashes.pop()


Stored = TypeVar("Stored", bound=np.generic)


def _with_spare(matrix: npt.NDArray[Stored], size: int) -> npt.NDArray[Stored]:
    """A copy of ``matrix``'s first ``size`` rows with room for a quarter more."""
    spare = np.empty((size + max(size // 4, MIN_SPARE_ROWS), matrix.shape[1]), dtype=matrix.dtype)
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
        self._mark_stamp: RowStamp = None  # the stamp of the row at the mark
        # History rows of writes this process already took in, newer than the mark,
        # each with its scope and the facts the write changed.
        self._own: dict[int, tuple[Scope, frozenset[str]]] = {}
        # The newest history row of each scope's own writes newer than the history mark.
        self._own_newest: dict[Scope, int] = {}
        # The newest history row known to be committed (the mark, or an own write), and
        # how many times it rose: see take_history's ``issued``.
        self._committed = 0
        self._epoch = 0

    @property
    def history_mark(self) -> int | None:
        """The newest history row taken in (None before the first); pass it to
        :func:`read_history` and what that reads to :meth:`take_history`."""
        return self._history_mark

    @property
    def epoch(self) -> int:
        """Changes whenever a newer history row is known committed (see :meth:`take_history`)."""
        return self._epoch

    def take_history(self, history: History, issued: int | None = None) -> int:
        """Forget scopes changed by others (another process) up to the snapshot
        ``history`` was read on; return that snapshot's history mark, which :meth:`put`
        takes. Synchronous: nothing else runs between its reading and its writing.

        ``issued`` is :attr:`epoch` as it was when the snapshot began, if it began with
        the read (a transaction's first statement), else None. A snapshot that began
        after a row was known committed holds that row, unless the database file was
        replaced by a copy: then everything is forgotten (see liz.facts.index.sqlite_history).
        """
        if self._history_mark is None:
            self._reset(history)  # the first look
            return history.mark
        current = issued == self._epoch
        if self._replaced(history, current):
            self._reset(history)
            return history.mark
        if history.mark <= self._history_mark:
            # Nothing new, or an older snapshot than the last one taken in.
            return history.mark
        if history.since is None:
            self._reset(history)  # rows since the mark were not read
            return history.mark
        stale: set[Scope] = set()
        for row in history.changed:
            if row.id <= self._history_mark:
                continue  # taken in by the reader that set the mark
            own = self._own.get(row.id)
            if own is None:
                stale.add(row.scope)
            elif own[0] != row.scope or row.fact_id not in own[1]:
                self._reset(history)  # another write holds an own write's row id
                return history.mark
        self.invalidate(stale)
        self._advance(history)
        return history.mark

    def _replaced(self, history: History, current: bool) -> bool:
        """Whether ``history`` comes from a database other than the one taken in so far."""
        # The row at the mark, if this snapshot has it: is it the row seen there?
        at_mark = history.since == self._history_mark and 0 < (history.since or 0) <= history.mark
        if at_mark and history.since_stamp != self._mark_stamp:
            return True
        if history.mark == self._history_mark and history.stamp != self._mark_stamp:
            return True
        # Lower than a row known committed before the snapshot began: rows vanished.
        return current and history.mark < self._committed

    def _advance(self, history: History) -> None:
        mark = history.mark
        self._own = {row: own for row, own in self._own.items() if row > mark}
        self._own_newest = {s: own for s, own in self._own_newest.items() if own > mark}
        self._history_mark, self._mark_stamp = mark, history.stamp
        if mark > self._committed:
            self._committed = mark
            self._epoch += 1

    def _reset(self, history: History) -> None:
        self._values.clear()
        self._own.clear()
        self._own_newest.clear()
        self._history_mark, self._mark_stamp = history.mark, history.stamp
        self._committed = history.mark
        self._epoch += 1

    def get(self, scope: Scope) -> ScopeVectors | None:
        entry = self._values.get(scope)
        if entry is None:
            return None
        self._values.move_to_end(scope)
        return entry[0]

    def put(self, scope: Scope, value: ScopeVectors, mark: int) -> None:
        """Keep ``value``, read on a snapshot at history ``mark`` (from :meth:`take_history`),
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
        facts = frozenset([*(fact.id for fact in log.added), *log.removed])
        self._own.update((row, (scope, facts)) for row in log.history_ids)
        if log.history_ids:
            newest = max(log.history_ids)
            self._own_newest[scope] = max(newest, self._own_newest.get(scope, 0))
            if newest > self._committed:
                self._committed = newest
                self._epoch += 1
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
