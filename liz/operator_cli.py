"""What the operator commands that read or change a few rows share (``liz facts queue``,
``liz twitter outbox`` and their kin): a session on ``DATABASE_URL``, no LLM, and
errors that end the command with a message and exit code 2."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, NoReturn, TypeVar

import typer

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

T = TypeVar("T")


def with_session(work: Callable[[AsyncSession], Awaitable[T]], *, reading: str) -> T:
    """Run ``work`` on a session of the configured database; errors end the command,
    a database's saying it cannot read ``reading`` ("the learning queue")."""
    from sqlalchemy.exc import SQLAlchemyError

    from liz.config import Settings
    from liz.db.engine import create_engine, make_sessionmaker
    from liz.errors import LizError
    from liz.settings_errors import load_settings

    async def main() -> T:
        settings = load_settings(Settings)
        engine = create_engine(settings.database_url, settings, pooled=False)
        try:
            async with make_sessionmaker(engine)() as session:
                return await work(session)
        finally:
            await engine.dispose()

    try:
        return asyncio.run(main())
    except LizError as exc:
        fail(exc.message)
    except (SQLAlchemyError, OSError) as exc:
        detail = getattr(exc, "orig", None) or exc
        fail(
            f"cannot read {reading} ({type(detail).__name__}: {detail}); check "
            "DATABASE_URL and run `liz db upgrade`"
        )


def fail(message: str) -> NoReturn:
    """End the command: ``message`` in red on stderr, exit code 2."""
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    raise typer.Exit(2)
