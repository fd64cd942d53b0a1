"""What the SQLite vector cache checks itself against: the ``FactHistory`` table.

Every change to a fact writes a history row, and history rows are never deleted,
so the newest row id (the history *mark*) only grows while the database file
does. A file restored from a copy breaks that: an older copy of the same
database brings back a lower mark (and the rows written after it later come
again, with the same ids and other meanings); a copy of another database may
have any mark, the cache's own too. So each read also stamps the rows it
names: a row's stamp (its fact id, a random uuid, and its time) tells the row
the cache saw from another row with the same id.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from liz.facts.domain import Scope

# (factId, createdAt) of a history row, or None for "no such row".
RowStamp = tuple[str, Any] | None

_NEWEST = 'SELECT id, "factId", "createdAt" FROM "FactHistory" ORDER BY id DESC LIMIT 1'
_ONE = 'SELECT "factId", "createdAt" FROM "FactHistory" WHERE id = ?'
_SINCE = 'SELECT id, "agentId", "userId", "factId" FROM "FactHistory" WHERE id > ?'


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


def read_history(db: sqlite3.Connection, since: int | None) -> History:
    """:class:`History` on the connection's current snapshot."""
    newest = db.execute(_NEWEST).fetchone()
    mark, stamp = (int(newest[0]), (newest[1], newest[2])) if newest else (0, None)
    since_stamp: RowStamp = None
    if since:
        row = db.execute(_ONE, (since,)).fetchone()
        since_stamp = (row[0], row[1]) if row else None
    changed: list[ChangedRow] = []
    if since is not None and mark > since:
        changed = [
            ChangedRow(row, (agent, user), fact)
            for row, agent, user, fact in db.execute(_SINCE, (since,))
        ]
    return History(mark, stamp, since, since_stamp, changed)
