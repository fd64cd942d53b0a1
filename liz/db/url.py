"""`DATABASE_URL` in every form liz accepts, turned into one SQLAlchemy async URL."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from liz.errors import UsageError

logger = logging.getLogger(__name__)

SQLITE_DRIVER = "sqlite+aiosqlite"
POSTGRES_DRIVER = "postgresql+asyncpg"

ACCEPTED_FORMS = (
    "file:./prisma/dev.db (Liz's form, relative to the working directory), "
    "file:/absolute/path.db, sqlite:///liz.db, sqlite+aiosqlite:///liz.db, "
    "postgresql://user:password@host:5432/dbname, postgres://..., "
    "postgresql+asyncpg://..."
)

# Prisma-only connection options: they tune Prisma's own engine, not a database driver.
_PRISMA_ONLY_OPTIONS = frozenset(
    {"connection_limit", "pool_timeout", "pgbouncer", "socket_timeout", "statement_cache_size"}
)


def _refuse(raw: str, reason: str) -> UsageError:
    return UsageError(
        f"DATABASE_URL {describe(raw)!r} is not usable: {reason}. Accepted forms: {ACCEPTED_FORMS}"
    )


def normalize_database_url(raw: str) -> str:
    """Return the SQLAlchemy async URL for a `DATABASE_URL` in any accepted form.

    SQLite goes to aiosqlite and PostgreSQL to asyncpg::

        >>> normalize_database_url("postgres://liz@db/liz")
        'postgresql+asyncpg://liz@db/liz'

    Liz's ``file:`` paths are resolved against the working directory now, so a later
    ``chdir`` cannot move the database. Raises :class:`UsageError` for anything else.
    """
    text = raw.strip()
    if not text:
        raise _refuse(raw, "it is empty")
    if text.startswith("file:"):
        return _from_prisma_file(raw, text)
    try:
        url = make_url(text)
    except ArgumentError as exc:
        raise _refuse(raw, "it is not a URL") from exc
    backend, _, driver = url.drivername.partition("+")
    if backend == "sqlite" and driver in ("", "aiosqlite"):
        # No file (sqlite://, :memory:) is an in-memory database: one connection,
        # gone at exit. Useful in tests; never shared between processes.
        # Swap the scheme only: rendering the URL would percent-escape the path.
        return f"{SQLITE_DRIVER}://{text.split('://', 1)[1]}"
    if backend in ("postgresql", "postgres") and driver in ("", "asyncpg"):
        return _postgres(url).render_as_string(hide_password=False)
    if backend in ("sqlite", "postgresql", "postgres"):
        raise _refuse(raw, f"liz connects through aiosqlite or asyncpg, not {driver!r}")
    raise _refuse(raw, f"liz stores data in SQLite or PostgreSQL, not {backend!r}")


def _from_prisma_file(raw: str, text: str) -> str:
    location, _, query = text[len("file:") :].partition("?")
    if query:
        logger.info("ignoring Prisma's SQLite options %r in DATABASE_URL", query)
    if location.startswith("//"):
        # file://host/path is a URI form Prisma does not write; file:///abs is fine.
        location = location[2:]
        if not location.startswith("/"):
            raise _refuse(raw, "write file:./relative.db or file:/absolute.db")
    if not location or location.endswith("/"):
        raise _refuse(raw, "it names no database file")
    path = Path(location).expanduser()
    if not path.is_absolute():
        path = Path.cwd() / path
    return f"{SQLITE_DRIVER}:///{path.resolve()}"


def _postgres(url: URL) -> URL:
    query = dict(url.query)
    for option in sorted(_PRISMA_ONLY_OPTIONS & query.keys()):
        logger.warning(
            "ignoring Prisma's %s in DATABASE_URL; liz sizes its pool with "
            "DB_POOL_SIZE, DB_MAX_OVERFLOW and DB_POOL_TIMEOUT",
            option,
        )
        del query[option]
    if query.get("schema") == "public":
        del query["schema"]  # Prisma writes it; it is PostgreSQL's default anyway
    return url.set(drivername=POSTGRES_DRIVER, query=query)


def asyncpg_connect_args(url: URL) -> tuple[URL, dict[str, Any]]:
    """Move libpq/Prisma-style options that asyncpg names differently out of the URL.

    ``?schema=x`` becomes the session's ``search_path``, ``sslmode`` becomes asyncpg's
    ``ssl`` and ``connect_timeout`` its ``timeout`` (in seconds). ``host=/socket/dir``
    stays: SQLAlchemy's asyncpg dialect reads it (pgserver gives such URLs).
    """
    query = dict(url.query)
    connect_args: dict[str, Any] = {}
    schema = query.pop("schema", None)
    if isinstance(schema, str):
        connect_args["server_settings"] = {"search_path": schema}
    sslmode = query.pop("sslmode", None)
    if isinstance(sslmode, str):
        connect_args["ssl"] = sslmode
    timeout = query.pop("connect_timeout", None)
    if isinstance(timeout, str):
        try:
            connect_args["timeout"] = float(timeout)
        except ValueError as exc:
            raise UsageError(
                f"DATABASE_URL: connect_timeout={timeout!r} is not a number of seconds"
            ) from exc
    return url.set(query=query), connect_args


def describe(url: str | URL) -> str:
    """The URL with its password hidden, for logs and error messages."""
    if not isinstance(url, str):
        return url.render_as_string(hide_password=True)
    text = url.strip()
    if text.startswith("file:"):
        return text  # a file path holds no password
    try:
        return make_url(text).render_as_string(hide_password=True)
    except ArgumentError:
        # Not a URL we can parse: show only the scheme, in case the rest is a secret.
        scheme, colon, _ = text.partition(":")
        return f"{scheme}:…" if colon else "<unparseable>"


describe_database_url = describe
