"""DATABASE_URL: every form liz accepts, and a clear refusal for the rest."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from liz.db.url import asyncpg_connect_args, describe, normalize_database_url
from liz.errors import UsageError


def test_liz_relative_file_url_resolves_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = normalize_database_url("file:./prisma/dev.db")
    assert url == f"sqlite+aiosqlite:///{tmp_path.resolve()}/prisma/dev.db"


def test_liz_absolute_file_url_keeps_its_path() -> None:
    assert normalize_database_url("file:/srv/liz/dev.db") == "sqlite+aiosqlite:////srv/liz/dev.db"


def test_prisma_sqlite_options_are_dropped() -> None:
    url = normalize_database_url("file:/srv/liz/dev.db?connection_limit=1")
    assert url == "sqlite+aiosqlite:////srv/liz/dev.db"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("sqlite:///liz.db", "sqlite+aiosqlite:///liz.db"),
        ("sqlite+aiosqlite:///liz.db", "sqlite+aiosqlite:///liz.db"),
        ("sqlite:////var/lib/liz.db", "sqlite+aiosqlite:////var/lib/liz.db"),
        # In-memory: one connection, gone at exit; for tests of code that needs no tables.
        ("sqlite+aiosqlite:///:memory:", "sqlite+aiosqlite:///:memory:"),
        ("postgresql://liz:pw@db:5432/liz", "postgresql+asyncpg://liz:pw@db:5432/liz"),
        ("postgres://liz:pw@db/liz", "postgresql+asyncpg://liz:pw@db/liz"),
        ("postgresql+asyncpg://liz@db/liz", "postgresql+asyncpg://liz@db/liz"),
        # pgserver's form: a Unix socket directory as a query parameter.
        (
            "postgresql://postgres:@/postgres?host=/tmp/x",
            "postgresql+asyncpg://postgres:@/postgres?host=%2Ftmp%2Fx",
        ),
        # Prisma writes ?schema=public; it is the default, so it goes.
        ("postgresql://liz@db/liz?schema=public", "postgresql+asyncpg://liz@db/liz"),
        ("postgresql://liz@db/liz?connection_limit=5", "postgresql+asyncpg://liz@db/liz"),
    ],
)
def test_accepted_forms_become_async_sqlalchemy_urls(raw: str, expected: str) -> None:
    assert normalize_database_url(raw) == expected


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "it is empty"),
        ("   ", "it is empty"),
        ("mysql://root:secret@db/liz", "not 'mysql'"),
        ("postgresql+psycopg2://liz@db/liz", "not 'psycopg2'"),
        ("sqlite+pysqlite:///liz.db", "not 'pysqlite'"),
        ("dev.db", "it is not a URL"),
        ("file:", "it names no database file"),
        ("file:./prisma/", "it names no database file"),
        ("file://server/share/dev.db", "write file:./relative.db or file:/absolute.db"),
    ],
)
def test_other_urls_are_refused_naming_the_accepted_forms(raw: str, reason: str) -> None:
    with pytest.raises(UsageError) as caught:
        normalize_database_url(raw)
    assert reason in caught.value.message
    assert "file:./prisma/dev.db" in caught.value.message
    assert "postgresql://user:password@host:5432/dbname" in caught.value.message


def test_refusal_does_not_echo_the_password() -> None:
    with pytest.raises(UsageError) as caught:
        normalize_database_url("mysql://root:hunter2@db/liz")
    assert "hunter2" not in caught.value.message


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://liz:hunter2@db:5432/liz", "postgresql://liz:***@db:5432/liz"),
        ("postgresql+asyncpg://liz@db/liz", "postgresql+asyncpg://liz@db/liz"),
        ("file:./prisma/dev.db", "file:./prisma/dev.db"),
        ("sqlite+aiosqlite:///liz.db", "sqlite+aiosqlite:///liz.db"),
    ],
)
def test_describe_hides_passwords(url: str, shown: str) -> None:
    assert describe(url) == shown


def test_libpq_and_prisma_options_become_asyncpg_arguments() -> None:
    url = make_url(
        normalize_database_url(
            "postgresql://liz@db/liz?sslmode=require&connect_timeout=7&schema=agents"
            "&application_name=liz"
        )
    )
    remaining, connect_args = asyncpg_connect_args(url)
    assert dict(remaining.query) == {"application_name": "liz"}
    assert connect_args == {
        "ssl": "require",
        "timeout": 7.0,
        "server_settings": {"search_path": "agents"},
    }


def test_a_connect_timeout_that_is_not_a_number_is_refused() -> None:
    url = make_url(normalize_database_url("postgresql://liz@db/liz?connect_timeout=soon"))
    with pytest.raises(UsageError, match="connect_timeout='soon' is not a number of seconds"):
        asyncpg_connect_args(url)
