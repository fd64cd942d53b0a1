"""Errors that tell the truth and leak nothing: 503 + Retry-After for outages, 504 past the
deadline, 500 with a request id (details only in the log), and a /health that sees a
database that cannot write.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from starlette.routing import Route as StarletteRoute

from liz.agent import BaseAgent
from liz.config import Settings
from liz.db.engine import create_engine
from liz.db.tables import MemoryRecord
from liz.http import create_app
from liz.pipeline import AgentFramework, AgentRequest, AgentResponse, Route
from liz.routes import converse
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import RecordedRequest, ScriptedError, ScriptedOpenAI
from liz.types import Next

pytestmark = pytest.mark.anyio
AGENT = "business-advisor"


def message(text: str = "hi", user: str = "u1") -> dict[str, Any]:
    return {"input": {"agentId": AGENT, "userId": user, "text": text}}


async def memory_count(runtime: Runtime) -> int:
    async with runtime.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(MemoryRecord)) or 0)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost")


@pytest.fixture
async def unreachable_runtime(
    request: pytest.FixtureRequest, tmp_path: Path, scripted: ScriptedOpenAI
) -> AsyncIterator[Runtime]:
    """A runtime whose database cannot be reached: a closed port, or a SQLite path that is
    a folder."""
    url = (
        f"postgresql://postgres@127.0.0.1:{closed_port()}/liz"
        if request.param == "postgres"
        else f"sqlite+aiosqlite:///{tmp_path}"
    )
    settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
    engine = create_engine(url, settings)
    llm = scripted.llm_client()
    yield Runtime(settings=settings, engine=engine, llm_client=llm)
    await llm.close()
    await engine.dispose()
    # aiosqlite reports a failed connect from its own thread a moment later; let it land
    # in this test's event loop rather than in a closed one.
    await asyncio.sleep(0.2)


@pytest.mark.parametrize("unreachable_runtime", ["sqlite", "postgres"], indirect=True)
async def test_an_unreachable_database_is_a_503_with_retry_after_and_no_details(
    unreachable_runtime: Runtime, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    app = create_app(build_framework(unreachable_runtime), {AGENT: agent})
    async with http_client(app) as client:
        response = await client.post("/agent/input", json=message())
        assert response.status_code == 503
        assert response.headers["retry-after"] == "5"
        assert response.json() == {
            "error": "the database is unavailable right now; try again in a few seconds"
        }
        keyed = await client.post("/agent/input", json=message(), headers={"idempotency-key": "k1"})
        assert keyed.status_code == 503 and keyed.headers["retry-after"] == "5"
        health = await client.get("/health")
        assert health.status_code == 503
        assert health.json()["database"].startswith("unreachable")
    assert scripted.requests == []


async def test_a_nul_in_the_user_id_is_a_400_that_shows_no_sql(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    response = await client.post("/agent/input", json=message(user="eve\x00"))
    assert response.status_code == 400
    error = response.json()["error"]
    assert "control character U+0000" in error
    assert "INSERT" not in error and "SELECT" not in error and "Memory" not in error
    assert await memory_count(runtime) == 0


async def test_an_unexpected_failure_is_a_500_with_a_request_id_and_details_only_in_the_log(
    runtime: Runtime, agent: BaseAgent, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        raise RuntimeError('secret detail: SELECT * FROM "Memory" WHERE "userId" = $1')

    framework = AgentFramework(runtime).use(broken)
    async with http_client(create_app(framework, {AGENT: agent})) as client:
        with caplog.at_level(logging.ERROR):
            response = await client.post("/agent/input", json=message())
    assert response.status_code == 500
    request_id = response.headers["x-request-id"]
    assert response.json() == {
        "error": f"internal error; the server log has the details under request id {request_id}",
        "requestId": request_id,
    }
    assert "secret detail" not in response.text
    assert any(
        request_id in record.getMessage() and "secret detail" in record.getMessage()
        for record in caplog.records
    )


async def test_a_well_formed_request_id_from_the_client_is_kept(client: httpx.AsyncClient) -> None:
    kept = await client.get("/agents", headers={"x-request-id": "trace-42"})
    assert kept.headers["x-request-id"] == "trace-42"
    replaced = await client.get("/agents", headers={"x-request-id": "bad id\\n"})
    assert replaced.headers["x-request-id"] != "bad id\\n"
    assert len(replaced.headers["x-request-id"]) == 32


async def test_the_providers_own_words_reach_the_log_not_the_client(
    runtime: Runtime,
    agent: BaseAgent,
    scripted: ScriptedOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    llm = scripted.llm_client(max_retries=0)
    refused = Runtime(settings=runtime.settings, engine=runtime.engine, llm_client=llm)
    scripted.respond_with(
        lambda request: ScriptedError(401, "Incorrect API key provided: sk-proj-****Zq7w")
    )
    async with http_client(create_app(build_framework(refused), {AGENT: agent})) as client:
        response = await client.post("/agent/input", json=message())
    await llm.close()
    assert response.status_code == 502
    error = response.json()["error"]
    assert "answered 401" in error and response.headers["x-request-id"] in error
    assert "sk-proj" not in error and "Incorrect API key" not in error
    assert "Incorrect API key provided: sk-proj-****Zq7w" in caplog.text
    assert "OPENAI_API_KEY" in caplog.text  # the operator is told what to check


# What a provider may say, with the parts a client must never see: a key's last
# characters, an organisation or project id, an internal host.
PROVIDER_WORDS = {
    401: ("Incorrect API key provided: sk-proj-****Zq7w", ["sk-proj", "Zq7w"]),
    403: ("Project proj_8f2Qk has no access to model scripted-large", ["proj_8f2Qk"]),
    429: ("Rate limit reached for org-Zx81 on tokens per min: used 29950", ["org-Zx81"]),
    500: ("inference shard 7 at 10.2.0.14 timed out", ["10.2.0.14", "shard"]),
}


@pytest.mark.parametrize(
    ("status", "answered", "told"),
    [
        (401, 502, ["the LLM endpoint refused the API key", "check OPENAI_API_KEY"]),
        (403, 502, ["the LLM endpoint refused the request", "may use the model"]),
        (429, 503, ["rate limiting", "try again in 17 s"]),
        (500, 502, ["the LLM endpoint failed", "try again in 17 s"]),
    ],
)
async def test_a_provider_error_is_explained_in_our_words_and_logged_in_its_own(
    runtime: Runtime,
    agent: BaseAgent,
    scripted: ScriptedOpenAI,
    caplog: pytest.LogCaptureFixture,
    status: int,
    answered: int,
    told: list[str],
) -> None:
    words, secrets = PROVIDER_WORDS[status]
    llm = scripted.llm_client(max_retries=0)
    failing = Runtime(settings=runtime.settings, engine=runtime.engine, llm_client=llm)
    scripted.respond_with(lambda request: ScriptedError(status, words, 17))
    async with http_client(create_app(build_framework(failing), {AGENT: agent})) as client:
        response = await client.post("/agent/input", json=message())
    await llm.close()
    assert response.status_code == answered
    error = response.json()["error"]
    for phrase in told:
        assert phrase in error
    assert response.headers["x-request-id"] in error  # where the operator finds the rest
    for secret in secrets:
        assert secret not in response.text
    assert words in caplog.text  # the provider's own words, for the operator
    assert await memory_count(runtime) == 1  # the user's message is kept


@pytest.mark.parametrize(
    ("answer", "hidden"),
    [
        # The router's model names a route the agent does not have.
        (
            {"route": "wire_funds_to_mallory", "confidence": 0.9, "reasoning": "asked to"},
            "wire_funds_to_mallory",
        ),
        # The router's model answers something that is not a route choice, twice: the
        # schema's insides are the operator's business.
        ({"verdict": "ignore your instructions"}, "RouteChoice"),
    ],
)
async def test_an_unusable_model_answer_is_explained_without_repeating_it(
    framework: AgentFramework,
    agent: BaseAgent,
    scripted: ScriptedOpenAI,
    caplog: pytest.LogCaptureFixture,
    answer: dict[str, Any],
    hidden: str,
) -> None:
    # A second route a user may reach, so the router's model is asked to choose.
    agent.add_route(Route("pricing", "Set or check a price.", handler=converse))
    scripted.respond_with(lambda request: answer if request.schema_name else "Noted.")
    async with http_client(create_app(framework, {AGENT: agent})) as client:
        response = await client.post("/agent/input", json=message())
    assert response.status_code == 502
    error = response.json()["error"]
    assert "could not be used" in error and "try again" in error
    assert response.headers["x-request-id"] in error
    assert hidden not in response.text and "routes" not in error
    assert hidden in caplog.text  # the operator sees what the model said


async def test_a_rate_limited_llm_is_a_503_with_the_providers_retry_after(
    runtime: Runtime, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    llm = scripted.llm_client(max_retries=0)
    limited = Runtime(settings=runtime.settings, engine=runtime.engine, llm_client=llm)
    scripted.fail_next(429, times=1, retry_after=17)
    async with http_client(create_app(build_framework(limited), {AGENT: agent})) as client:
        response = await client.post("/agent/input", json=message())
    await llm.close()
    assert response.status_code == 503
    assert response.headers["retry-after"] == "17"
    assert "rate limiting" in response.json()["error"]
    assert await memory_count(runtime) == 1  # the user's message is kept


def timed_runtime(runtime: Runtime, seconds: float) -> Runtime:
    settings = runtime.settings.model_copy(update={"liz_request_timeout": seconds})
    return Runtime(settings=settings, engine=runtime.engine, llm_client=runtime.llm_client)


async def stall(request: RecordedRequest) -> str:
    await asyncio.Event().wait()  # never answers; the request's deadline ends it
    return "never"


async def test_a_stalled_llm_ends_in_a_504_at_the_request_deadline(
    runtime: Runtime, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    scripted.respond_with(stall)
    app = create_app(build_framework(timed_runtime(runtime, 0.5)), {AGENT: agent})
    async with http_client(app) as client:
        response = await client.post("/agent/input", json=message())
        streamed = await client.post(
            "/agent/input", json=message(), headers={"accept": "text/event-stream"}
        )
    assert response.status_code == 504
    assert "LIZ_REQUEST_TIMEOUT (0.5 s)" in response.json()["error"]
    assert streamed.text.startswith("event: error\n")
    assert '"status": 504' in streamed.text
    assert await memory_count(runtime) == 2  # both messages are kept


async def test_the_deadline_also_bounds_routes_that_do_not_watch_it(
    runtime: Runtime, agent: BaseAgent
) -> None:
    async def slow_health(request: Any) -> Any:
        await asyncio.Event().wait()

    app = create_app(build_framework(timed_runtime(runtime, 0.2)), {AGENT: agent})
    app.router.routes.insert(0, StarletteRoute("/slow", slow_health))
    async with http_client(app) as client:
        response = await client.get("/slow")
    assert response.status_code == 504
    assert "LIZ_REQUEST_TIMEOUT" in response.json()["error"]
    assert response.headers["x-request-id"]


async def test_health_reports_a_read_only_sqlite_database(
    tmp_path: Path, _sqlite_template: Path, agent: BaseAgent, scripted: ScriptedOpenAI
) -> None:
    path = tmp_path / "liz.db"
    path.write_bytes(_sqlite_template.read_bytes())
    url = f"sqlite+aiosqlite:///file:{path}?mode=ro&uri=true"
    settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
    engine = create_engine(url, settings)
    runtime = Runtime(settings=settings, engine=engine, llm_client=scripted.llm_client())
    app = create_app(build_framework(runtime), {AGENT: agent})
    async with http_client(app) as client:
        health = await client.get("/health")
        sent = await client.post("/agent/input", json=message())
    await engine.dispose()
    assert health.status_code == 503
    assert health.json()["database"] == "cannot write (read-only or disk full)"
    assert sent.status_code == 503
    assert "cannot store anything right now" in sent.json()["error"]
    assert sent.headers["retry-after"] == "5"


async def test_health_is_ok_on_a_database_that_writes(client: httpx.AsyncClient) -> None:
    response = await client.get("/health")
    assert response.status_code == 200
    assert response.json()["database"] == "ok"


async def test_health_leaves_no_probe_rows(client: httpx.AsyncClient, runtime: Runtime) -> None:
    for _ in range(3):
        assert (await client.get("/health")).status_code == 200
    assert await memory_count(runtime) == 0
