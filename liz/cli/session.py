"""What the commands that read or change a few rows share (``liz facts queue``,
``liz twitter outbox`` and their kin): a session on ``DATABASE_URL``, no LLM, and
errors that end the command with a message and exit code 2."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from liz.cli.failing import fail, reported

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

T = TypeVar("T")


def with_session(work: Callable[[AsyncSession], Awaitable[T]], *, reading: str) -> T:
    """Run ``work`` on a session of the configured database; errors end the command,
    a database's saying it cannot read ``reading`` ("the learning queue")."""
    from liz.config import Settings
    from liz.config.loading import load_settings
    from liz.db.engine import create_engine, make_sessionmaker

    async def main() -> T:
        settings = load_settings(Settings)
        engine = create_engine(settings.database_url, settings, pooled=False)
        try:
            async with make_sessionmaker(engine)() as session:
                return await work(session)
        finally:
            await engine.dispose()

    return run(main, reading=reading)


def run(main: Callable[[], Coroutine[Any, Any, T]], *, reading: str) -> T:
    """Run a command's coroutine; a liz error or a database failure ends the command."""
    import sqlite3

    from sqlalchemy.exc import SQLAlchemyError

    try:
        with reported():
            return asyncio.run(main())
    except (SQLAlchemyError, OSError, sqlite3.Error) as exc:
        detail = getattr(exc, "orig", None) or exc
        fail(
            f"cannot read {reading} ({type(detail).__name__}: {detail}); check "
            "DATABASE_URL and run `liz db upgrade`"
        )
