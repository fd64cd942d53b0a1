"""Cross-site writes refused: only JSON bodies are written, only this server's names are
answered, and a server open to the network will not start without a key."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from liz.agent import BaseAgent
from liz.config import Settings
from liz.db.tables import MemoryRecord
from liz.errors import UsageError
from liz.http import create_app
from liz.http.exposure import check_exposure
from liz.pipeline import AgentFramework
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from tests.serve_process import free_port, run_liz

pytestmark = pytest.mark.anyio
AGENT = "business-advisor"
BODY = '{"input": {"agentId": "business-advisor", "userId": "victim", "text": "hi"}}'


async def memory_count(runtime: Runtime) -> int:
    async with runtime.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(MemoryRecord)) or 0)


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonp",
    ],
)
async def test_a_post_that_is_not_json_is_a_415_and_stores_nothing(
    client: httpx.AsyncClient, runtime: Runtime, scripted: ScriptedOpenAI, content_type: str | None
) -> None:
    scripted.reply("stored?")
    headers = {"Content-Type": content_type} if content_type else {}
    response = await client.post("/agent/input", content=BODY, headers=headers)
    assert response.status_code == 415
    assert "Content-Type: application/json" in response.json()["error"]
    assert await memory_count(runtime) == 0
    assert scripted.requests == []


async def test_every_write_route_refuses_a_body_that_is_not_json(
    framework: AgentFramework, agent: BaseAgent
) -> None:
    app = create_app(framework, {AGENT: agent})
    writes = [
        (method, str(getattr(route, "path_format", "")).replace("{", "").replace("}", ""))
        for route in app.routes
        for method in getattr(route, "methods", None) or ()
        if method in ("POST", "PUT", "PATCH")
    ]
    assert ("POST", "/agent/input") in writes
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        for method, path in writes:
            response = await client.request(
                method, path, content=BODY, headers={"Content-Type": "text/plain"}
            )
            assert response.status_code == 415, (method, path)


async def test_a_json_post_with_a_charset_is_served(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    scripted.reply("Hello.")
    response = await client.post(
        "/agent/input", content=BODY, headers={"Content-Type": "application/json; charset=utf-8"}
    )
    assert response.status_code == 200


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:3000", "127.0.0.2", ""])
async def test_a_host_this_server_is_not_is_refused_before_any_data_is_read(
    client: httpx.AsyncClient, host: str
) -> None:
    response = await client.get(f"/agents/{AGENT}/users/victim/facts", headers={"Host": host})
    assert response.status_code == 400
    assert "LIZ_ALLOWED_HOSTS" in response.json()["error"]


@pytest.mark.parametrize("host", ["localhost:3000", "127.0.0.1:3000", "[::1]:3000", "LOCALHOST"])
async def test_the_loopback_names_are_answered_by_default(
    client: httpx.AsyncClient, host: str
) -> None:
    response = await client.get("/agents", headers={"Host": host})
    assert response.status_code == 200


async def test_allowed_hosts_name_the_hosts_answered(runtime: Runtime, agent: BaseAgent) -> None:
    runtime.settings = runtime.settings.model_copy(
        update={"liz_allowed_hosts": ["liz.example.com", "*.internal.example"]}
    )
    from liz.runtime.bootstrap import build_framework

    app = create_app(build_framework(runtime), {AGENT: agent})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://liz.example.com") as client:
        assert (await client.get("/agents")).status_code == 200
        assert (
            await client.get("/agents", headers={"Host": "a.internal.example"})
        ).status_code == 200
        assert (await client.get("/agents", headers={"Host": "localhost"})).status_code == 400


def test_allowed_hosts_are_read_comma_separated() -> None:
    settings = Settings(_env_file=None, liz_allowed_hosts="a.example, b.example")  # type: ignore[call-arg,arg-type]
    assert settings.liz_allowed_hosts == ["a.example", "b.example"]


def test_serving_on_a_public_address_without_a_key_refuses_to_start(tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/liz.db", "LIZ_ALLOW_OPEN": "false"}
    done = run_liz("serve", "--host", "0.0.0.0", "--port", str(free_port()), env=env, cwd=tmp_path)
    assert done.returncode != 0
    assert "LIZ_API_KEY" in done.stderr and "LIZ_ALLOW_OPEN=true" in done.stderr
    assert not (tmp_path / "liz.db").exists()  # refused before anything was opened


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({}, "LIZ_API_KEY"),
        ({"liz_api_key": "k"}, "LIZ_ALLOWED_HOSTS"),
        ({"liz_allow_open": True}, "LIZ_ALLOWED_HOSTS"),
        ({"liz_api_key": "k", "liz_allowed_hosts": ["liz.example.com"]}, None),
        ({"liz_allow_open": True, "liz_allowed_hosts": ["*"]}, None),
    ],
)
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "liz.example.com"])
def test_a_public_address_needs_a_key_or_open_on_purpose_and_its_host_names(
    host: str, given: dict[str, object], problem: str | None
) -> None:
    settings = Settings(_env_file=None, **given)  # type: ignore[arg-type]
    if problem is None:
        check_exposure(settings, host)
        return
    with pytest.raises(UsageError, match=problem):
        check_exposure(settings, host)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.5"])
def test_a_loopback_address_needs_nothing(host: str) -> None:
    check_exposure(Settings(_env_file=None), host)  # type: ignore[call-arg]


def test_starlettes_test_client_is_answered_as_it_is_in_process() -> None:
    from starlette.testclient import TestClient

    from liz.http.starlette_app import starlette_app

    app = starlette_app(Settings(_env_file=None))  # type: ignore[call-arg]
    app.state.agents = {}
    with TestClient(app) as client:
        assert client.get("/agents").status_code == 200  # Host: testserver
