"""The API described: /openapi.json is a valid OpenAPI 3.1 document naming every route the
app serves, and real bodies (replies, traces, stream events, facts, errors) match it."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from starlette.routing import Route

from liz.agent import BaseAgent
from liz.app import App
from liz.config import Settings
from liz.facts.store import FactStore
from liz.http import create_app
from liz.http.openapi import openapi_document
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from tests.fixtures.facts import USER, fact, seed

pytestmark = pytest.mark.anyio


def matches(document: dict[str, Any], schema_name: str, body: Any) -> None:
    """Raise when ``body`` does not follow the document's schema ``schema_name``."""
    root = {"$ref": f"#/components/schemas/{schema_name}", "components": document["components"]}
    Draft202012Validator(root).validate(body)


def served_operations(app: Any) -> set[tuple[str, str]]:
    return {
        (route.path_format, method.lower())
        for route in app.routes
        if isinstance(route, Route)
        for method in route.methods or ()
        if method != "HEAD"
    }


def documented_operations(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (path, method)
        for path, item in document["paths"].items()
        for method in item
        if method != "parameters"
    }


async def test_the_document_is_valid_openapi_3_1(client: httpx.AsyncClient) -> None:
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"] == "3.1.0"
    validate(document)


@pytest.mark.parametrize("playground", [True, False])
def test_every_route_of_the_app_is_in_the_document(playground: bool) -> None:
    settings = Settings(_env_file=None, liz_playground=playground)  # type: ignore[call-arg]
    app = App(settings=settings).add_agents_from()
    starlette = app.asgi()
    document = openapi_document(starlette.routes)
    served = served_operations(starlette)
    assert served == documented_operations(document)
    assert (("/playground", "get") in served) is playground
    for path in ("/agent/input", "/agents", "/health", "/openapi.json", "/docs"):
        assert path in document["paths"]
    assert "/agents/{agentId}/users/{userId}/facts/{factId}/history" in document["paths"]


async def test_a_traced_reply_and_its_stream_match_the_document(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    document = (await client.get("/openapi.json")).json()
    scripted.reply("Price for margin.", "Price for value.")
    body = {"input": {"agentId": "business-advisor", "userId": USER, "text": "Prices?"}}
    reply = await client.post("/agent/input?trace=1", json=body)
    matches(document, "AgentReply", reply.json())
    matches(document, "Trace", reply.json()["trace"])

    stream = await client.post(
        "/agent/input?trace=1", json=body, headers={"Accept": "text/event-stream"}
    )
    content = document["paths"]["/agent/input"]["post"]["responses"]["200"]["content"]
    events = content["text/event-stream"]["x-liz-events"]
    seen = set()
    for block in stream.text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        schema = events[fields["event"]]["$ref"].split("/")[-1]
        matches(document, schema, json.loads(fields["data"]))
        seen.add(fields["event"])
    assert seen == {"token", "trace", "reply"}


async def test_info_and_failures_match_the_document(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    matches(document, "Agents", (await client.get("/agents")).json())
    matches(document, "Health", (await client.get("/health")).json())
    for response in (
        await client.post("/agent/input", content=b"{not json"),
        await client.post("/agent/input", json={"input": {"agentId": "nobody", "userId": "u"}}),
        await client.get("/nowhere"),
    ):
        assert response.status_code >= 400
        matches(document, "Error", response.json())


async def test_facts_bodies_match_the_document(
    runtime: Runtime, store: FactStore, scripted: ScriptedOpenAI, agent: BaseAgent
) -> None:
    runtime.facts = store
    (fact_id,) = await seed(store, scripted, fact("User owns a bakery"), agent=agent.agent_id)
    app = create_app(build_framework(runtime), {agent.agent_id: agent})
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost"
    ) as client:
        document = (await client.get("/openapi.json")).json()
        base = f"/agents/{agent.agent_id}/users/{USER}/facts"
        matches(document, "FactList", (await client.get(base)).json())
        matches(document, "FactList", (await client.get(base, params={"q": "bakery"})).json())
        matches(document, "Fact", (await client.get(f"{base}/{fact_id}")).json())
        matches(document, "Fact", (await client.delete(f"{base}/{fact_id}")).json())
        history = (await client.get(f"{base}/{fact_id}/history")).json()
        matches(document, "FactHistory", history)
        assert [entry["event"] for entry in history["history"]] == ["ADD", "DELETE"]


async def test_the_api_page_shows_every_operation_without_loading_anything(
    client: httpx.AsyncClient,
) -> None:
    document = (await client.get("/openapi.json")).json()
    page = await client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for path, method in documented_operations(document):
        assert f'id="{method}-{path}"' in page.text
    for name in document["components"]["schemas"]:
        assert f'id="schema-{name}"' in page.text
    assert "<script" not in page.text and "<link" not in page.text
    assert "//" not in "".join(part.split('"')[0] for part in page.text.split('href="')[1:])


async def test_the_api_page_renders_the_descriptions_markdown(client: httpx.AsyncClient) -> None:
    page = (await client.get("/docs")).text
    assert "<code>Accept: text/event-stream</code>" in page
    assert "<code>?trace=1</code>" in page
    assert "<li><code>token</code>" in page  # the events' Markdown list
    # A schema's and a field's descriptions, rendered in the schema's field table.
    assert "the message inside <code>input</code>" in page
    assert "<code>text_and_image</code> when imageUrls are sent" in page
    assert "`" not in page  # no Markdown left raw anywhere


async def test_every_body_field_is_described(client: httpx.AsyncClient) -> None:
    schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]
    undescribed = [
        f"{name}.{field}"
        for name, schema in schemas.items()
        for field, property in schema.get("properties", {}).items()
        if not property.get("description")
    ]
    assert undescribed == []
    reply = schemas["AgentReply"]
    assert reply["required"] == ["text", "route", "agentId", "userId", "roomId"]
    assert {"trace", "pendingApproval", "approval"} <= reply["properties"].keys()


async def test_markdown_in_a_description_adds_no_markup_of_its_own() -> None:
    from liz.playground.pages import markdown

    assert "<script>" not in markdown("<script>alert(1)</script> and `code`")
    assert "<code>code</code>" in markdown("<script>alert(1)</script> and `code`")


@pytest.mark.parametrize("api_key", [None, "server-key"])
async def test_the_server_has_an_icon_open_to_every_browser(
    runtime: Runtime, agent: BaseAgent, api_key: str | None
) -> None:
    from pydantic import SecretStr

    if api_key:
        runtime.settings = runtime.settings.model_copy(update={"liz_api_key": SecretStr(api_key)})
    app = create_app(build_framework(runtime), {agent.agent_id: agent})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        icon = await client.get("/favicon.ico")
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.text.startswith("<svg")
