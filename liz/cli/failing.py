"""The one way a ``liz`` command fails: ``error: MESSAGE`` in red on stderr, an exit code."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer

# A mistake in how the command was called or configured; the message says how to fix it.
USAGE_EXIT = 2


def fail(message: str, code: int = USAGE_EXIT) -> NoReturn:
    """End the command: ``message`` in red on stderr, exit ``code``."""
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code)


@contextmanager
def reported() -> Iterator[None]:
    """Every :class:`liz.errors.LizError` raised inside ends the command with its message."""
    from liz.errors import LizError

    try:
        yield
    except LizError as exc:
        fail(exc.message)
