"""An existing Liz database (made by Prisma) is adopted by `liz db upgrade`, rows intact.

The DDL below is what `prisma migrate dev` writes for schema.prisma's Memory and
Tweet on SQLite and PostgreSQL, with Prisma's own `_prisma_migrations` table.
Prisma stores a SQLite DateTime as integer milliseconds since the epoch.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import text

from liz.db.engine import create_engine, make_sessionmaker
from liz.db.memories import recent_memories
from liz.db.migrate import alembic_config, check, current, upgrade
from liz.errors import StorageError

HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()

PRISMA_SQLITE_DDL = """
CREATE TABLE "_prisma_migrations" (
    "id"                    TEXT PRIMARY KEY NOT NULL,
    "checksum"              TEXT NOT NULL,
    "finished_at"           DATETIME,
    "migration_name"        TEXT NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        DATETIME,
    "started_at"            DATETIME NOT NULL DEFAULT current_timestamp,
    "applied_steps_count"   INTEGER UNSIGNED NOT NULL DEFAULT 0
);
CREATE TABLE "Memory" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "userId" TEXT NOT NULL,
    "agentId" TEXT NOT NULL,
    "roomId" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "generator" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE "Tweet" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "text" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "username" TEXT NOT NULL,
    "conversationId" TEXT,
    "inReplyToId" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "permanentUrl" TEXT
);
CREATE INDEX "Memory_roomId_idx" ON "Memory"("roomId");
CREATE INDEX "Memory_userId_agentId_idx" ON "Memory"("userId", "agentId");
CREATE INDEX "Memory_type_idx" ON "Memory"("type");
CREATE INDEX "Tweet_userId_idx" ON "Tweet"("userId");
CREATE INDEX "Tweet_conversationId_idx" ON "Tweet"("conversationId");
"""

PRISMA_POSTGRES_DDL = """
CREATE TABLE "Memory" (
    "id" TEXT NOT NULL, "userId" TEXT NOT NULL, "agentId" TEXT NOT NULL,
    "roomId" TEXT NOT NULL, "content" TEXT NOT NULL, "type" TEXT NOT NULL,
    "generator" TEXT NOT NULL, "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Memory_pkey" PRIMARY KEY ("id")
);
CREATE TABLE "Tweet" (
    "id" TEXT NOT NULL, "text" TEXT NOT NULL, "userId" TEXT NOT NULL,
    "username" TEXT NOT NULL, "conversationId" TEXT, "inReplyToId" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP, "permanentUrl" TEXT,
    CONSTRAINT "Tweet_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "Memory_roomId_idx" ON "Memory"("roomId");
CREATE INDEX "Memory_userId_agentId_idx" ON "Memory"("userId", "agentId");
CREATE INDEX "Memory_type_idx" ON "Memory"("type");
CREATE INDEX "Tweet_userId_idx" ON "Tweet"("userId");
CREATE INDEX "Tweet_conversationId_idx" ON "Tweet"("conversationId");
"""

# (id, text, createdAt as Prisma wrote it): epoch milliseconds (22:13:20 and 22:13:25
# UTC), and one row written by hand whose createdAt came from the column default,
# in SQLite's text form, between the two.
LIZ_ROWS = [
    ("m1", "hello liz", 1_700_000_000_000),
    ("m2", "hi ada, how can I help?", 1_700_000_005_000),
    ("m3", "tell me about WAL", "2023-11-14 22:13:22"),
]
NEWEST_FIRST = ["m2", "m3", "m1"]


def make_liz_sqlite_database(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.executescript(PRISMA_SQLITE_DDL)
        db.execute(
            "INSERT INTO _prisma_migrations (id, checksum, migration_name, applied_steps_count) "
            "VALUES ('1', 'abc', '20240101000000_init', 1)"
        )
        for identifier, said, created in LIZ_ROWS:
            db.execute(
                'INSERT INTO "Memory" VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
                (identifier, "ada", "liz", "room", f'{{"text": "{said}"}}', "text", "llm", created),
            )
        db.execute(
            'INSERT INTO "Tweet" (id, text, "userId", username, "createdAt") '
            "VALUES ('t1', 'gm', 'u1', 'ada', 1700000000000)"
        )
    os.chmod(path, 0o600)


async def _read_back(url: str) -> list[str]:
    engine = create_engine(url)
    try:
        async with make_sessionmaker(engine)() as session:
            found = await recent_memories(session, user_id="ada", agent_id="liz", limit=10)
            tweets = await session.scalar(text('SELECT count(*) FROM "Tweet"'))
            prisma_rows = None
            if engine.dialect.name == "sqlite":
                prisma_rows = await session.scalar(text("SELECT count(*) FROM _prisma_migrations"))
    finally:
        await engine.dispose()
    assert tweets == 1
    assert prisma_rows in (None, 1)  # Prisma's own history is left alone
    return [m.id for m in found]


@pytest.mark.anyio
async def test_liz_sqlite_database_is_adopted_with_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "prisma" / "dev.db"
    make_liz_sqlite_database(path)
    url = f"file:{path}"
    upgrade(url)
    assert current(url) == HEAD
    check(url)  # adopted tables match the models exactly
    assert await _read_back(url) == NEWEST_FIRST


@pytest.mark.anyio
async def test_liz_db_upgrade_command_adopts_a_liz_database(tmp_path: Path) -> None:
    make_liz_sqlite_database(tmp_path / "prisma" / "dev.db")
    env = {**os.environ, "DATABASE_URL": "file:./prisma/dev.db"}
    liz = Path(sys.executable).with_name("liz")
    done = subprocess.run(
        [str(liz), "db", "upgrade"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    url = f"file:{tmp_path / 'prisma' / 'dev.db'}"
    assert current(url) == HEAD
    assert await _read_back(url) == NEWEST_FIRST


def test_a_foreign_memory_table_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute('CREATE TABLE "Memory" (id TEXT PRIMARY KEY, body TEXT)')
    with pytest.raises(StorageError) as caught:
        upgrade(f"sqlite:///{path}")
    assert "lacks column(s)" in caught.value.message
    assert "userId" in caught.value.message
    with sqlite3.connect(path) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"Memory"}


@pytest.mark.anyio
@pytest.mark.parametrize("empty_database_url", ["postgres"], indirect=True)
async def test_liz_postgres_database_is_adopted_with_its_rows(empty_database_url: str) -> None:
    url = empty_database_url
    engine = create_engine(url, pooled=False)
    async with engine.begin() as connection:
        for statement in PRISMA_POSTGRES_DDL.split(";"):
            if statement.strip():
                await connection.execute(text(statement))
        for identifier, said, created in LIZ_ROWS:
            when = "'2023-11-14 22:13:22'" if isinstance(created, str) else (
                f"to_timestamp({created / 1000}) AT TIME ZONE 'UTC'"
            )  # fmt: skip
            await connection.execute(
                text(
                    f"INSERT INTO \"Memory\" VALUES (:id, 'ada', 'liz', 'room', :content, "
                    f"'text', 'llm', {when})"
                ),
                {"id": identifier, "content": f'{{"text": "{said}"}}'},
            )
        await connection.execute(
            text(
                'INSERT INTO "Tweet" (id, text, "userId", username) '
                "VALUES ('t1', 'gm', 'u1', 'ada')"
            )
        )
    await engine.dispose()
    upgrade(url)
    assert current(url) == HEAD
    check(url)
    assert await _read_back(url) == NEWEST_FIRST
