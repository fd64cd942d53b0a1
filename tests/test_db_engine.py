"""Engines: SQLite tuned for concurrent writers, PostgreSQL pooled from Settings."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from liz.config import Settings
from liz.db.engine import create_engine, dialect_name, make_read_sessionmaker, make_sessionmaker
from liz.db.memories import count_memories, insert_memory
from liz.db.tables import MemoryRecord
from liz.types import Memory

pytestmark = pytest.mark.anyio


def _settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg, arg-type]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        pragmas = {
            name: await connection.scalar(text(f"PRAGMA {name}"))
            for name in ("journal_mode", "busy_timeout", "foreign_keys", "synchronous")
        }
    assert pragmas == {"journal_mode": "wal", "busy_timeout": 30000, "foreign_keys": 1,
                       "synchronous": 1}  # fmt: skip  # synchronous 1 is NORMAL


async def test_200_concurrent_writers_all_land(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # Each writer reads, then writes: the pattern that fails at once with
    # "database is locked" on SQLite when transactions start deferred.
    async def write(n: int) -> None:
        async with sessions() as session:
            before = await count_memories(session, user_id="ada")
            await insert_memory(
                session,
                Memory(
                    user_id="ada", agent_id="liz", room_id="r", type="text",
                    generator="external", content={"text": f"#{n}", "seen": before},
                    created_at=datetime.now(UTC),
                ),
            )  # fmt: skip
            await session.commit()

    await asyncio.gather(*(write(n) for n in range(200)))
    async with sessions() as session:
        assert await count_memories(session, user_id="ada") == 200
        texts = await session.scalars(select(func.count(func.distinct(MemoryRecord.content))))
        assert texts.one() == 200


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_pool_settings_are_applied(database_url: str) -> None:
    engine = create_engine(
        database_url, _settings(db_pool_size=1, db_max_overflow=0, db_pool_timeout=0.2)
    )
    try:
        assert dialect_name(engine) == "postgresql"
        async with engine.connect() as held:
            await held.execute(text("SELECT 1"))
            # The only connection is taken and no overflow is allowed: the next waits, then fails.
            with pytest.raises(PoolTimeout):
                async with engine.connect() as second:
                    await second.execute(text("SELECT 1"))
    finally:
        await engine.dispose()

    # Two kept and one overflow: three connections at once, and the fourth waits, then fails.
    sized = create_engine(
        database_url, _settings(db_pool_size=2, db_max_overflow=1, db_pool_timeout=0.2)
    )
    try:
        async with sized.connect() as a, sized.connect() as b, sized.connect() as c:
            for held in (a, b, c):
                await held.execute(text("SELECT 1"))
            with pytest.raises(PoolTimeout):
                async with sized.connect() as fourth:
                    await fourth.execute(text("SELECT 1"))
    finally:
        await sized.dispose()


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_eight_turns_at_once_keep_their_connections_by_default(database_url: str) -> None:
    # Each burst holds eight connections at once; the second must find the first's
    # still open (an overflow connection is closed as it comes back, and opening one
    # starts a PostgreSQL backend).
    engine = create_engine(database_url, _settings())
    sessions = make_sessionmaker(engine)
    all_held = asyncio.Barrier(8)

    async def backend() -> int:
        async with sessions() as session:
            pid = await session.scalar(text("SELECT pg_backend_pid()"))
            await all_held.wait()
            return int(pid)

    try:
        first = set(await asyncio.gather(*(backend() for _ in range(8))))
        second = set(await asyncio.gather(*(backend() for _ in range(8))))
    finally:
        await engine.dispose()
    assert len(first) == 8
    assert second == first


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_connection_the_server_dropped_is_replaced(database_url: str) -> None:
    engine = create_engine(database_url, _settings(db_pool_size=1, db_max_overflow=0))
    sessions = make_sessionmaker(engine)
    try:
        async with sessions() as session:
            pid = await session.scalar(text("SELECT pg_backend_pid()"))
        admin = create_engine(database_url, pooled=False)
        async with admin.connect() as connection:
            await connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            # pg_terminate_backend only signals the backend: wait until it has gone, so the
            # pooled connection is dropped while idle, not in the middle of the ping.
            for _ in range(500):
                # pg_stat_activity is as of a transaction's first read of it: end each one.
                still_there = await connection.scalar(
                    text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}
                )
                await connection.rollback()
                if not still_there:
                    break
                await asyncio.sleep(0.01)
            else:
                raise AssertionError("the terminated backend never went")
        await admin.dispose()
        await asyncio.sleep(0.05)  # the client reads the server's goodbye and the socket's end
        # pool_pre_ping notices the dead connection and opens a new one.
        async with sessions() as session:
            assert await session.scalar(text("SELECT pg_backend_pid()")) != pid
    finally:
        await engine.dispose()


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_prisma_schema_parameter_sets_the_search_path(database_url: str) -> None:
    schema = f"s_{uuid.uuid4().hex[:8]}"
    admin = create_engine(database_url, pooled=False)
    async with admin.begin() as connection:
        await connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    await admin.dispose()
    separator = "&" if "?" in database_url else "?"
    engine = create_engine(f"{database_url}{separator}schema={schema}")
    try:
        async with engine.connect() as connection:
            assert await connection.scalar(text("SELECT current_schema()")) == schema
    finally:
        await engine.dispose()


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_libpq_style_options_connect(database_url: str) -> None:
    # pgserver's URL talks over a Unix socket (?host=/dir); libpq options ride along.
    separator = "&" if "?" in database_url else "?"
    engine = create_engine(f"{database_url}{separator}sslmode=disable&connect_timeout=10")
    try:
        async with engine.connect() as connection:
            assert await connection.scalar(text("SELECT 1")) == 1
    finally:
        await engine.dispose()


def _said(text: str) -> Memory:
    return Memory(
        user_id="ada", agent_id="liz", room_id="r", type="text", generator="external",
        content={"text": text}, created_at=datetime.now(UTC),
    )  # fmt: skip


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_reads_go_on_while_a_writer_holds_its_transaction(
    engine: AsyncEngine, sessions: async_sessionmaker[AsyncSession]
) -> None:
    reads = make_read_sessionmaker(engine)
    async with sessions() as setup, setup.begin():
        await insert_memory(setup, _said("committed"))
    async with sessions() as writer, writer.begin():
        await insert_memory(writer, _said("not yet committed"))
        # The writer holds the file's write lock; a read neither waits nor sees its row.
        async with reads() as reader:
            assert await count_memories(reader, user_id="ada") == 1
    async with reads() as reader:
        assert await count_memories(reader, user_id="ada") == 2


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_read_sessions_refuse_to_write(engine: AsyncEngine) -> None:
    reads = make_read_sessionmaker(engine)
    with pytest.raises(OperationalError, match="readonly"):
        async with reads() as reader, reader.begin():
            await insert_memory(reader, _said("sneaked in"))
    async with reads() as reader:
        assert await count_memories(reader, user_id="ada") == 0


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_writer_cancelled_mid_transaction_leaves_nothing_and_blocks_no_one(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # A request cut off by its deadline while it holds the one writing connection.
    holding = asyncio.Event()

    async def cut_off_writer() -> None:
        async with sessions() as session, session.begin():
            await insert_memory(session, _said("cut off"))
            holding.set()
            await asyncio.Event().wait()

    async def queued_writer(text: str) -> None:
        async with sessions() as session, session.begin():
            await insert_memory(session, _said(text))

    cut = asyncio.create_task(cut_off_writer())
    await holding.wait()
    waiting = [asyncio.create_task(queued_writer(f"queued {n}")) for n in range(3)]
    await asyncio.sleep(0)  # they queue for the connection
    waiting[1].cancel()  # one gives up while queued
    cut.cancel()
    outcomes = await asyncio.gather(cut, *waiting, return_exceptions=True)
    assert [type(o).__name__ for o in outcomes] == [
        "CancelledError", "NoneType", "CancelledError", "NoneType"
    ]  # fmt: skip
    async with sessions() as session:
        rows = await session.scalars(select(MemoryRecord.content))
        assert sorted(rows) == ['{"text": "queued 0"}', '{"text": "queued 2"}']


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_statements_tell_rows_counts_ids_and_errors_as_sqlalchemy_does(
    engine: AsyncEngine,
) -> None:
    # Each statement makes one call on SQLite's thread (liz._compat); what a
    # caller reads of it is what the driver's own cursor would tell.
    async with engine.begin() as connection:
        await connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)"))
        inserted = await connection.execute(text("INSERT INTO t (name) VALUES ('a')"))
        assert inserted.lastrowid == 1
        many = await connection.execute(
            text("INSERT INTO t (name) VALUES (:name)"), [{"name": "b"}, {"name": "c"}]
        )
        assert many.rowcount == 2
        updated = await connection.execute(text("UPDATE t SET name = name || '!' WHERE id > 1"))
        assert updated.rowcount == 2
        rows = (await connection.execute(text("SELECT id, name FROM t ORDER BY id"))).all()
        assert [tuple(row) for row in rows] == [(1, "a"), (2, "b!"), (3, "c!")]
    with pytest.raises(IntegrityError, match="UNIQUE"):
        async with engine.begin() as connection:
            await connection.execute(text("INSERT INTO t (name) VALUES ('d')"))
            await connection.execute(text("INSERT INTO t (name) VALUES ('a')"))
    async with engine.connect() as connection:  # rolled back whole; the connection still works
        assert await connection.scalar(text("SELECT count(*) FROM t")) == 3
