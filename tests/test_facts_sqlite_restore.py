"""SQLite searches under a running store: a database file restored from a copy is
searched as it is, never as the store remembered the old one (its cached vectors,
liz.facts.sqlite.cache); a search cut short leaves nothing open."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.config import Settings
from liz.db.engine import create_engine, make_sessionmaker
from liz.errors import LLMError
from liz.facts.store import FactStore
from liz.llm import LLMClient
from liz.testing.openai_server import ScriptedOpenAI
from tests.fixtures.facts import AGENT, USER, fact_settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "liz.db"
    shutil.copyfile(request.getfixturevalue("_sqlite_template"), path)
    return path


@pytest.fixture
async def running(database: Path, llm: LLMClient) -> AsyncIterator[tuple[FactStore, AsyncEngine]]:
    engine = create_engine(f"sqlite+aiosqlite:///{database}")
    store = FactStore(make_sessionmaker(engine), llm, engine=engine, settings=fact_settings())
    yield store, engine
    await engine.dispose()


async def copy_file(engine: AsyncEngine, source: Path, target: Path) -> None:
    """Copy a database file as a backup tool would: the engine's connections closed
    first (the last one to close folds the write-ahead log into the file)."""
    await engine.dispose()
    for leftover in (Path(f"{target}-wal"), Path(f"{target}-shm")):
        leftover.unlink(missing_ok=True)
    shutil.copyfile(source, target)


async def add(store: FactStore, *texts: str) -> list[str]:
    results = await store.apply([{"op": "add", "text": text} for text in texts], AGENT, USER)
    return [result.fact_id for result in results if result.fact_id is not None]


async def found(store: FactStore, query: str) -> list[str]:
    # Any similarity counts and the words differ from the facts': the vectors decide.
    return sorted(fact.text for fact in await store.search(query, AGENT, USER, threshold=-1.0))


async def test_a_restored_older_copy_is_searched_as_it_is(
    running: tuple[FactStore, AsyncEngine], database: Path, tmp_path: Path
) -> None:
    store, engine = running
    tea, _ = await add(store, "User likes tea", "User plays chess")
    backup = tmp_path / "backup.db"
    await copy_file(engine, database, backup)
    await add(store, "User keeps bees")
    await store.delete(tea, AGENT, USER)
    assert await found(store, "hobbies") == ["User keeps bees", "User plays chess"]

    await copy_file(engine, backup, database)
    assert await found(store, "hobbies") == ["User likes tea", "User plays chess"]
    # Writes after the restore reuse the history's row ids of the writes it undid.
    await add(store, "User rides a red bicycle", "User owns a cat")
    assert await found(store, "hobbies") == [
        "User likes tea",
        "User owns a cat",
        "User plays chess",
        "User rides a red bicycle",
    ]


async def test_writes_by_another_process_after_a_restore_are_not_taken_for_the_old_ones(
    running: tuple[FactStore, AsyncEngine], database: Path, tmp_path: Path, llm: LLMClient
) -> None:
    store, engine = running
    await add(store, "User likes tea")
    backup = tmp_path / "backup.db"
    await copy_file(engine, database, backup)
    await add(store, "User keeps bees", "User sings in a choir")
    assert await found(store, "hobbies") == [
        "User keeps bees",
        "User likes tea",
        "User sings in a choir",
    ]

    await copy_file(engine, backup, database)
    # Before this store searches again, another process writes as many facts to the
    # restored file as the store had seen: the newest history row has the same id.
    other_engine = create_engine(f"sqlite+aiosqlite:///{database}")
    other = FactStore(
        make_sessionmaker(other_engine), llm, engine=other_engine, settings=fact_settings()
    )
    try:
        await add(other, "User runs marathons", "User grows tomatoes")
    finally:
        await other_engine.dispose()
    assert await found(store, "hobbies") == [
        "User grows tomatoes",
        "User likes tea",
        "User runs marathons",
    ]


async def test_a_copy_of_another_database_with_as_much_history_replaces_the_facts(
    running: tuple[FactStore, AsyncEngine],
    database: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    llm: LLMClient,
) -> None:
    store, engine = running
    await add(store, "User likes tea", "User plays chess")
    assert await found(store, "hobbies") == ["User likes tea", "User plays chess"]

    elsewhere = tmp_path / "elsewhere.db"
    shutil.copyfile(request.getfixturevalue("_sqlite_template"), elsewhere)
    other_engine = create_engine(f"sqlite+aiosqlite:///{elsewhere}")
    other = FactStore(
        make_sessionmaker(other_engine), llm, engine=other_engine, settings=fact_settings()
    )
    await add(other, "User keeps bees", "User owns a cat")  # the same history row ids
    await copy_file(other_engine, elsewhere, tmp_path / "elsewhere-copy.db")

    await copy_file(engine, tmp_path / "elsewhere-copy.db", database)
    assert await found(store, "hobbies") == ["User keeps bees", "User owns a cat"]


async def test_searches_cut_short_leave_the_database_usable(
    running: tuple[FactStore, AsyncEngine], scripted: ScriptedOpenAI
) -> None:
    # A search reads the database while the query's embedding is on its way; when the
    # embedding fails, what it read must not stay open: more failures than the store
    # has read connections, then writes and searches go on as before.
    store, _ = running
    await add(store, "User likes tea")
    assert await found(store, "drinks") == ["User likes tea"]  # the dimension is known now
    failures = Settings().db_pool_size + Settings().db_max_overflow + 2
    for _ in range(failures):
        scripted.fail_next(400)
        with pytest.raises(LLMError):
            await store.search("tea", AGENT, USER)
    await add(store, "User keeps bees")
    assert await found(store, "hobbies") == ["User keeps bees", "User likes tea"]


async def test_a_scope_searched_while_empty_finds_the_facts_added_later(
    running: tuple[FactStore, AsyncEngine],
) -> None:
    store, _ = running
    assert await found(store, "hobbies") == []
    (bees,) = await add(store, "User keeps bees")
    assert await found(store, "hobbies") == ["User keeps bees"]
    await store.delete(bees, AGENT, USER)
    assert await found(store, "hobbies") == []
    await add(store, "User plays chess")
    assert await found(store, "hobbies") == ["User plays chess"]
