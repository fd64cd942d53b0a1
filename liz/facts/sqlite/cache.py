"""The SQLite storage's memory: each scope's vectors, checked against ``FactHistory``.

Every change writes a history row, never deleted, so the newest row id (the *mark*)
is a revision number across processes: a scope with newer rows from another process
is read again; this process's own writes are patched in (:meth:`ScopeCache.absorb`).
A file restored from a copy can lower the mark or reuse ids, so the row at the mark
is also stamped (its fact id and time).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, null, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from liz.facts.domain import ChangeLog, ModelPair, Scope
from liz.facts.queries import HISTORY, MODEL_BOUNDS, scope_values
from liz.facts.sqlite.vectors import ScopeVectors

# (factId, createdAt) of a history row, or None for "no such row".
RowStamp = tuple[str, Any] | None

_ROW = (HISTORY.id, HISTORY.agentId, HISTORY.userId, HISTORY.factId, HISTORY.createdAt)
_NEWEST = select(select(*_ROW).order_by(HISTORY.id.desc()).limit(1).subquery())
# The scope's model bounds ride along as rows without an id. Built once: building a
# statement costs more than running it.
_BOUNDS = [select(null(), *bound.selected_columns, null(), null()) for bound in MODEL_BOUNDS]
_NEWEST_AND_BOUNDS = union_all(_NEWEST, *_BOUNDS)
_SINCE_AND_BOUNDS = union_all(
    _NEWEST, select(*_ROW).where(HISTORY.id >= bindparam("since")), *_BOUNDS
)


@dataclass(frozen=True)
class ChangedRow:
    """A history row newer than the cache's mark: which fact of which scope changed."""

    id: int
    scope: Scope
    fact_id: str


@dataclass(frozen=True)
class History:
    """What one snapshot says of the history: its newest row (the ``mark``) and that
    row's stamp; for ``since`` (the mark the cache had; None: not read), that row's
    stamp on this snapshot and the rows after it."""

    mark: int
    stamp: RowStamp
    since: int | None
    since_stamp: RowStamp
    changed: list[ChangedRow]


async def read_history(
    session: AsyncSession, since: int | None, scope: Scope
) -> tuple[History, tuple[ModelPair, ...]]:
    """:class:`History` on the session's current snapshot (the newest row, and the row at
    ``since`` with every row after it) and the scope's model bounds, in one statement."""
    values = scope_values(scope)
    if since is None:
        found = (await session.execute(_NEWEST_AND_BOUNDS, values)).all()
    else:
        found = (await session.execute(_SINCE_AND_BOUNDS, {**values, "since": since})).all()
    bounds = tuple((row[1], int(row[2])) for row in found if row[0] is None)
    found = [row for row in found if row[0] is not None]
    rows = {row[0]: row for row in found}
    mark = max(rows, default=0)
    stamp: RowStamp = (rows[mark][3], rows[mark][4]) if rows else None
    at_since = rows.get(since) if since else None
    since_stamp: RowStamp = (at_since[3], at_since[4]) if at_since else None
    changed = [
        ChangedRow(row_id, (row[1], row[2]), row[3])
        for row_id, row in sorted(rows.items())
        if since is not None and row_id > since
    ]
    return History(mark, stamp, since, since_stamp, changed), bounds


class ScopeCache:
    """Per-scope vectors, dropped when another process changes the scope's facts
    (history rows newer than the mark that are not this process's own writes)."""

    def __init__(self, max_scopes: int) -> None:
        # Each value with the history mark it was loaded at.
        self._values: OrderedDict[Scope, tuple[ScopeVectors, int]] = OrderedDict()
        self._max_scopes = max_scopes
        self._history_mark: int | None = None
        self._mark_stamp: RowStamp = None  # the stamp of the row at the mark
        # Own writes' history rows newer than the mark: their scope and facts changed.
        self._own: dict[int, tuple[Scope, frozenset[str]]] = {}
        self._own_newest: dict[Scope, int] = {}  # the newest such row of each scope
        # The newest history row known committed, and how many times it rose.
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

        ``issued`` is :attr:`epoch` as it was when the snapshot began, if known: a
        snapshot begun after a row was known committed holds it, unless the file was
        replaced by a copy; then everything is forgotten.
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
