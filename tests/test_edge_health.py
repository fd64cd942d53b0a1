"""/health tells the truth about writes, and a SQLite server that could not write recovers by
itself once its file can be written again (chattr +i: the file refuses writes, even root's)."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from liz.agent import BaseAgent
from liz.config import Settings
from liz.db.engine import create_engine
from liz.http import create_app
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI

pytestmark = pytest.mark.anyio
AGENT = "business-advisor"


def message(text: str = "hi") -> dict[str, Any]:
    return {"input": {"agentId": AGENT, "userId": "u1", "text": text}}


def chattr(flag: str, *paths: Path) -> None:
    subprocess.run(["chattr", flag, *map(str, paths)], check=True, capture_output=True)


@pytest.fixture
def database(tmp_path: Path, _sqlite_template: Path) -> Iterator[Path]:
    path = tmp_path / "liz.db"
    path.write_bytes(_sqlite_template.read_bytes())
    probe = tmp_path / "probe"
    probe.touch()
    try:
        chattr("+i", probe)
        chattr("-i", probe)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs chattr +i (root on ext4 or similar) to make a file refuse writes")
    yield path
    chattr("-i", *[p for p in tmp_path.glob("liz.db*")])


@contextmanager
def immutable(database: Path) -> Iterator[None]:
    files = [p for p in (database, Path(f"{database}-wal")) if p.exists()]
    chattr("+i", *files)
    try:
        yield
    finally:
        chattr("-i", *files)


@asynccontextmanager
async def served(
    database: Path, agent: BaseAgent, scripted: ScriptedOpenAI
) -> AsyncIterator[httpx.AsyncClient]:
    url = f"sqlite+aiosqlite:///{database}"
    settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
    engine = create_engine(url, settings)
    llm = scripted.llm_client()
    runtime = Runtime(settings=settings, engine=engine, llm_client=llm)
    app = create_app(build_framework(runtime), {AGENT: agent})
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            yield client
    finally:
        await runtime.background.drain()
        await llm.close()
        await engine.dispose()


async def until_healthy(client: httpx.AsyncClient) -> httpx.Response:
    """/health, asked again while it is not ok yet (its answer is kept a few seconds)."""
    for _ in range(100):
        response = await client.get("/health")
        if response.status_code == 200:
            return response
        await asyncio.sleep(0.1)
    return response


async def test_health_sees_a_database_that_stopped_taking_writes_and_its_return(
    database: Path, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    async with served(database, agent, scripted) as client:
        assert (await client.get("/health")).status_code == 200
        await asyncio.sleep(2.1)  # past the kept answer
        with immutable(database):
            health = await client.get("/health")
            scripted.reply("Not stored.")
            sent = await client.post("/agent/input", json=message())
        assert sent.status_code == 503
        assert health.status_code == 503, health.json()
        assert health.json()["status"] == "degraded"
        assert (await until_healthy(client)).json()["database"] == "ok"
        scripted.reply("Stored.")
        assert (await client.post("/agent/input", json=message())).status_code == 200


async def test_a_server_started_on_a_read_only_file_recovers_without_a_restart(
    database: Path, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    with immutable(database):
        async with served(database, agent, scripted) as client:
            health = await client.get("/health")
            scripted.reply("Not stored.")
            sent = await client.post("/agent/input", json=message())
            assert health.status_code == 503
            assert sent.status_code == 503
            chattr("-i", database, *database.parent.glob("liz.db-wal"))
            recovered = await until_healthy(client)
            scripted.reply("Stored.")
            after = await client.post("/agent/input", json=message("again"))
    assert recovered.status_code == 200
    assert after.status_code == 200, after.json()
