"""The trust model: LIZ_API_KEY acts for any user; a user token (HS256 JWT, sub = userId) only
for its own user."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jwt
import pytest
from pydantic import SecretStr
from sqlalchemy import func, select

from liz.agent import BaseAgent
from liz.db.tables import MemoryRecord
from liz.http import create_app
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI

pytestmark = pytest.mark.anyio
AGENT = "business-advisor"
SECRET = "jwt-secret-for-tests-" + "0123456789abcdef" * 3
API_KEY = "server-key"


def token(sub: Any = "ann", *, secret: str = SECRET, **claims: Any) -> str:
    payload = {"sub": sub, "exp": int(time.time()) + 600, **claims}
    if sub is None:
        del payload["sub"]
    return jwt.encode(payload, secret, algorithm="HS256")


def bearer(value: str) -> dict[str, str]:
    return {"authorization": f"Bearer {value}"}


def message(user: str = "ann") -> dict[str, Any]:
    return {"input": {"agentId": AGENT, "userId": user, "text": "hello"}}


async def memory_count(runtime: Runtime) -> int:
    async with runtime.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(MemoryRecord)) or 0)


async def app_client(
    runtime: Runtime, agent: BaseAgent, **secrets: str
) -> AsyncIterator[httpx.AsyncClient]:
    update = {name: SecretStr(value) for name, value in secrets.items()}
    settings = runtime.settings.model_copy(update=update)
    guarded = Runtime(settings=settings, engine=runtime.engine, llm_client=runtime.llm_client)
    app = create_app(build_framework(guarded), {AGENT: agent})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        yield client


@pytest.fixture
async def both(runtime: Runtime, agent: BaseAgent) -> AsyncIterator[httpx.AsyncClient]:
    async for client in app_client(runtime, agent, liz_api_key=API_KEY, liz_jwt_secret=SECRET):
        yield client


@pytest.fixture
async def tokens_only(runtime: Runtime, agent: BaseAgent) -> AsyncIterator[httpx.AsyncClient]:
    async for client in app_client(runtime, agent, liz_jwt_secret=SECRET):
        yield client


async def test_a_user_token_sends_its_own_users_messages(
    both: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    scripted.reply("Hi Ann.")
    response = await both.post("/agent/input", json=message("ann"), headers=bearer(token("ann")))
    assert response.status_code == 200 and response.json()["userId"] == "ann"
    assert await memory_count(runtime) == 2


async def test_a_user_token_cannot_write_as_another_user(
    both: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime
) -> None:
    response = await both.post("/agent/input", json=message("bob"), headers=bearer(token("ann")))
    assert response.status_code == 403
    assert response.json() == {
        "error": "this token is for user 'ann'; it cannot act for user 'bob'"
    }
    assert await memory_count(runtime) == 0 and scripted.requests == []


@pytest.mark.parametrize(
    "path",
    [
        f"/agents/{AGENT}/users/bob/facts",
        f"/agents/{AGENT}/users/bob/facts/some-id",
        f"/agents/{AGENT}/users/bob/facts/some-id/history",
        f"/agents/{AGENT}/users/b%6Fb/facts",
    ],
)
async def test_a_user_token_cannot_read_or_delete_another_users_facts(
    both: httpx.AsyncClient, path: str
) -> None:
    for method in ("GET", "DELETE"):
        response = await both.request(method, path, headers=bearer(token("ann")))
        assert response.status_code == 403, (method, path)
        assert "cannot act for user 'bob'" in response.json()["error"]


async def test_a_user_token_reaches_its_own_facts_and_the_agent_list(
    both: httpx.AsyncClient,
) -> None:
    own = await both.get(f"/agents/{AGENT}/users/ann/facts", headers=bearer(token("ann")))
    assert own.status_code != 403  # 503 here: this runtime keeps no facts
    listed = await both.get("/agents", headers=bearer(token("ann")))
    assert listed.status_code == 200


async def test_a_user_token_cannot_use_other_paths(both: httpx.AsyncClient) -> None:
    response = await both.get("/admin", headers=bearer(token("ann")))
    assert response.status_code == 403
    assert "this path needs LIZ_API_KEY" in response.json()["error"]


async def test_the_api_key_still_acts_for_any_user(
    both: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    scripted.reply("Hi Bob.", "Hi Cy.")
    for user in ("bob", "cy"):
        response = await both.post("/agent/input", json=message(user), headers=bearer(API_KEY))
        assert response.status_code == 200
    facts = await both.get(f"/agents/{AGENT}/users/bob/facts", headers=bearer(API_KEY))
    assert facts.status_code != 403


@pytest.mark.parametrize(
    ("credential", "error"),
    [
        (token(exp=int(time.time()) - 3600), "the token has expired; get a new one"),
        (token(secret="another-secret-" + "x" * 60), "signature does not match"),
        (token(sub=None), "the token has no 'sub' claim"),
        (jwt.encode({"sub": "ann"}, SECRET, algorithm="HS256"), "has no 'exp' claim"),
        (token(nbf=int(time.time()) + 3600), "not valid yet"),
        (token(aud="someone-else"), "names an audience"),
        (token(sub="\u200b"), "sub must be a userId"),
        (token(sub=7), "sub"),
        (jwt.encode({"sub": "ann", "exp": 9e9}, SECRET, algorithm="HS512"), "signed with HS256"),
        (
            jwt.encode({"sub": "ann", "exp": 9e9}, None, algorithm="none"),  # type: ignore[arg-type]
            "signed with HS256",
        ),
        ("not-a-token", "neither LIZ_API_KEY nor a valid JWT"),
    ],
)
async def test_a_bad_token_is_a_401_that_says_why(
    both: httpx.AsyncClient, runtime: Runtime, credential: str, error: str
) -> None:
    response = await both.post("/agent/input", json=message(), headers=bearer(credential))
    assert response.status_code == 401
    assert error in response.json()["error"]
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert await memory_count(runtime) == 0


async def test_missing_credentials_name_both_kinds(both: httpx.AsyncClient) -> None:
    response = await both.post("/agent/input", json=message())
    assert response.status_code == 401
    assert "Authorization: Bearer <LIZ_API_KEY or a user token>" in response.json()["error"]
    assert (await both.get("/health")).status_code == 200


async def test_with_tokens_only_no_bearer_value_acts_as_the_server(
    tokens_only: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    refused = await tokens_only.post("/agent/input", json=message(), headers=bearer(API_KEY))
    assert refused.status_code == 401
    scripted.reply("Hi.")
    ok = await tokens_only.post("/agent/input", json=message(), headers=bearer(token()))
    assert ok.status_code == 200
