"""Alembic migrations on fresh SQLite and PostgreSQL databases; pgvector; drift checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.db.engine import create_engine
from liz.db.migrate import alembic_config, check, current, upgrade, upgrade_async
from liz.db.vector_support import require_pgvector
from liz.errors import StorageError

HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()


async def _table_names(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as connection:
        return set(await connection.run_sync(lambda c: inspect(c).get_table_names()))


@pytest.mark.anyio
async def test_upgrade_creates_liz_tables_on_a_fresh_database(empty_database_url: str) -> None:
    assert current(empty_database_url) is None
    upgrade(empty_database_url)
    assert current(empty_database_url) == HEAD
    engine = create_engine(empty_database_url)
    try:
        assert {"Memory", "Tweet", "alembic_version"} <= await _table_names(engine)
    finally:
        await engine.dispose()


def test_migrated_database_has_no_drift_from_the_models(database_url: str) -> None:
    check(database_url)  # raises StorageError listing the differences


def test_upgrade_twice_changes_nothing(database_url: str) -> None:
    upgrade(database_url)
    assert current(database_url) == HEAD
    check(database_url)


@pytest.mark.anyio
async def test_check_reports_a_missing_index(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text('DROP INDEX "Memory_type_idx"'))
    finally:
        await engine.dispose()
    with pytest.raises(StorageError) as caught:
        check(database_url)
    assert "Memory_type_idx" in caught.value.message


@pytest.mark.anyio
async def test_upgrade_from_inside_a_running_event_loop(empty_database_url: str) -> None:
    upgrade(empty_database_url)  # blocks, on a worker thread: Alembic runs its own loop
    await upgrade_async(empty_database_url)
    assert current(empty_database_url) == HEAD


@pytest.mark.anyio
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_pgvector_is_enabled_on_a_server_that_has_it(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        version = await connection.scalar(
            text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        )
    assert version is not None
    await require_pgvector(engine)  # does not raise


@pytest.mark.anyio
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_needs_no_pgvector(engine: AsyncEngine) -> None:
    await require_pgvector(engine)  # does not raise


@pytest.mark.anyio
async def test_plain_postgres_migrates_and_vector_features_say_how_to_fix(
    plain_postgres_url: str,
) -> None:
    upgrade(plain_postgres_url)  # the server has no pgvector: the core schema still applies
    assert current(plain_postgres_url) == HEAD
    engine = create_engine(plain_postgres_url)
    try:
        assert {"Memory", "Tweet"} <= await _table_names(engine)
        with pytest.raises(StorageError) as caught:
            await require_pgvector(engine)
    finally:
        await engine.dispose()
    message = caught.value.message
    assert "apt install postgresql-15-pgvector" in message
    assert "liz db upgrade" in message
    assert "or use SQLite" in message


def test_upgrade_of_an_unreachable_database_is_a_storage_error() -> None:
    # Port 1 on loopback: nothing listens there, so the connection is refused.
    with pytest.raises(StorageError) as caught:
        upgrade("postgresql://liz:hunter2@127.0.0.1:1/liz")
    assert "127.0.0.1:1" in caught.value.message
    assert "hunter2" not in caught.value.message


def test_several_processes_migrating_at_once_all_succeed(empty_database_url: str) -> None:
    # What happens when several `liz serve` processes start together on one database.
    liz = Path(sys.executable).with_name("liz")
    env = {**os.environ, "DATABASE_URL": empty_database_url}
    runs = [
        subprocess.Popen(
            [str(liz), "db", "upgrade"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outcomes = [(run.wait(timeout=120), run.stderr.read() if run.stderr else "") for run in runs]
    for run in runs:
        for stream in (run.stdout, run.stderr):
            if stream is not None:
                stream.close()
    assert [code for code, _ in outcomes] == [0, 0, 0], outcomes
    assert current(empty_database_url) == HEAD
    check(empty_database_url)
