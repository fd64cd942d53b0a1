"""How the store's work meets the database: writes to one scope run one at a time and
are planned again when a fact changed meanwhile; driver failures become StorageError."""

from __future__ import annotations

import asyncio
import sqlite3
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy.exc import SQLAlchemyError
from tenacity import wait_none

from liz.errors import StorageError
from liz.facts.domain import PlanConflict, Scope
from liz.retry import retrying
from liz.types import Clock

T = TypeVar("T")
ATTEMPTS = 3  # plans made again when another writer changed a fact meanwhile


class ScopeWrites:
    """One writer per scope in this process; the commit's advisory lock (PostgreSQL) or
    SQLite's write lock orders writers across processes."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._locks: weakref.WeakValueDictionary[Scope, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    async def run(self, scope: Scope, write: Callable[[], Awaitable[T]]) -> T:
        """Run ``write`` (which plans and commits) under the scope's lock, again on a
        :class:`PlanConflict`; :class:`StorageError` when conflicts keep coming."""
        lock = self._locks.get(scope)
        if lock is None:
            lock = self._locks[scope] = asyncio.Lock()
        conflict = f"the facts of user {scope[1]!r} kept changing while being written; try again"
        async with lock:
            try:
                async for attempt in retrying(
                    retry_if=lambda exc: isinstance(exc, PlanConflict),
                    attempts=ATTEMPTS,
                    wait=wait_none(),
                    clock=self._clock,
                ):
                    with attempt, database_errors():
                        return await write()
            except PlanConflict as exc:
                raise StorageError(conflict) from exc
        raise StorageError(conflict)  # not reached: `retrying` returns or raises


@contextmanager
def database_errors() -> Iterator[None]:
    """Translate the database driver's failures, here and only here, into StorageError."""
    try:
        yield
    except (SQLAlchemyError, OSError, sqlite3.Error) as exc:
        detail = getattr(exc, "orig", None) or exc
        raise StorageError(
            f"the facts database failed ({type(detail).__name__}: {detail}); check that it is "
            "reachable and migrated (`liz db upgrade`)"
        ) from exc
