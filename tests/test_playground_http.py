"""The playground page over HTTP: served with no data and no secret, nothing loaded from
elsewhere, refused (401, a key prompt) without LIZ_API_KEY, gone with LIZ_PLAYGROUND=false."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from liz.agent import BaseAgent
from liz.config import Settings
from liz.http import create_app
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime

pytestmark = pytest.mark.anyio
API_KEY = "page-test-key"
LLM_KEY = "sk-the-servers-own-llm-key"
MakeClient = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def make_client(runtime: Runtime, agent: BaseAgent, settings: Settings) -> MakeClient:
    @asynccontextmanager
    async def make(**overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
        runtime.settings = settings.model_copy(
            update={"openai_api_key": SecretStr(LLM_KEY), **overrides}
        )
        app = create_app(build_framework(runtime), {agent.agent_id: agent})
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            yield client

    return make


def external_urls(html: str) -> list[str]:
    return re.findall(r"""(?:src|href|action)=["']?(?:https?:)?//[^"' >]+""", html)


async def test_the_page_is_one_self_contained_document(make_client: MakeClient) -> None:
    async with make_client() as client:
        page = await client.get("/playground")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    html = page.text
    for name in ("Conversation", "Prompt", "Route", "Recalled facts", "Facts"):
        assert f">{name}</h2>" in html
    assert '<label for="message">Message</label>' in html
    assert external_urls(html) == [] and "<script src" not in html and "<link" not in html
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert "unsafe-inline" not in policy and "http" not in policy
    assert LLM_KEY not in html


async def test_with_an_api_key_the_page_without_it_is_a_401_key_prompt(
    make_client: MakeClient,
) -> None:
    async with make_client(liz_api_key=SecretStr(API_KEY)) as client:
        prompt = await client.get("/playground")
        wrong = await client.get("/playground", headers={"Authorization": "Bearer nope"})
        right = await client.get("/playground", headers={"Authorization": f"Bearer {API_KEY}"})
        api_call = await client.get("/agents")
        docs = await client.get("/docs")
    assert prompt.status_code == 401
    assert prompt.headers["www-authenticate"].startswith("Bearer")
    assert '<label for="api-key">API key</label>' in prompt.text
    assert "Conversation" not in prompt.text and "business-advisor" not in prompt.text
    assert wrong.status_code == 401 and "API key" in wrong.json()["error"]
    assert right.status_code == 200 and ">Conversation</h2>" in right.text
    assert api_call.status_code == 401
    assert docs.status_code == 401 and '<label for="api-key">' in docs.text
    for response in (prompt, right):
        assert API_KEY not in response.text and LLM_KEY not in response.text
        assert "set-cookie" not in response.headers


async def test_with_the_playground_off_the_page_is_not_served(make_client: MakeClient) -> None:
    async with make_client(liz_playground=False) as client:
        page = await client.get("/playground")
        docs = await client.get("/docs")
    assert page.status_code == 404 and page.json() == {"error": "Not Found"}
    assert docs.status_code == 200
    async with make_client(liz_playground=False, liz_api_key=SecretStr(API_KEY)) as client:
        keyed = await client.get("/playground", headers={"Authorization": f"Bearer {API_KEY}"})
    assert keyed.status_code == 404
