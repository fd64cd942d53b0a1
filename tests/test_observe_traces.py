"""One turn's OpenTelemetry trace, as a collector receives it over OTLP/HTTP.

A real receiver (tests/otlp_receiver.py) is the exporter's endpoint; the turn runs over
the HTTP app against the scripted model, with facts on.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from liz.agent import BaseAgent
from liz.config import Settings
from liz.http import create_app
from liz.observe.logs import log_formatter
from liz.observe.tracing import configure_tracing
from liz.pipeline import AgentFramework, AgentRequest, AgentResponse
from liz.runtime.bootstrap import build_framework, open_runtime
from liz.testing.scripted_model import scripted_model
from liz.types import Next
from tests.otlp_receiver import Receiver, otlp_receiver

pytestmark = pytest.mark.anyio

AGENT = "business-advisor"
SECRET = "my cat is called Zanzibar"
INCOMING_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{INCOMING_TRACE}-00f067aa0ba902b7-01"


STANDARD_STEPS = [
    "validate_input",
    "load_memories.load",
    "recall_facts.recall",
    "wrap_context",
    "create_memory",
    "extract_facts.extract",
    "router",
]


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    with otlp_receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "liz-under-test")
        # A busy test machine may take its time; the spans read here must all arrive.
        monkeypatch.setenv("OTEL_BSP_EXPORT_TIMEOUT", "30000")
        yield receiver
    configure_tracing({})  # tracing off again for the tests after this one


def message(text: str = SECRET) -> dict[str, Any]:
    return {"input": {"agentId": AGENT, "userId": "ann", "text": text}}


async def one_turn(
    settings: Settings,
    agent: BaseAgent,
    *,
    headers: dict[str, str] | None = None,
    broken: bool = False,
) -> httpx.Response:
    llm = scripted_model().llm_client()
    async with open_runtime(settings, llm_client=llm) as runtime:
        framework: AgentFramework = build_framework(runtime)
        if broken:
            framework.use(_broken)
        app = create_app(framework, {agent.agent_id: agent})
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            response = await client.post("/agent/input", json=message(), headers=headers or {})
        await runtime.background.drain()  # the learning the turn started is done
    await llm.close()
    return response  # leaving open_runtime exported every span


async def _broken(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    raise RuntimeError("a bug in the user's own middleware")


async def give_ann_a_fact(settings: Settings) -> None:
    """Ann is known before the traced turn, so its recall embeds her words and searches."""
    llm = scripted_model().llm_client()
    async with open_runtime(settings, llm_client=llm) as runtime:
        assert runtime.facts is not None
        add = {"op": "add", "text": "User lives in Lyon", "categories": ["home", "place"]}
        (added,) = await runtime.facts.apply([add], AGENT, "ann")
        assert added.status == "applied"
    await llm.close()


@pytest.fixture
async def turn(receiver: Receiver, settings: Settings, agent: BaseAgent) -> AsyncIterator[Receiver]:
    await give_ann_a_fact(settings)
    receiver.clear()  # only the turn's own spans are left to read
    response = await one_turn(settings, agent, headers={"traceparent": TRACEPARENT})
    assert response.status_code == 200
    yield receiver


async def test_one_turn_is_one_trace_continuing_the_callers_traceparent(turn: Receiver) -> None:
    (server,) = turn.named("POST")
    assert server.trace_id == INCOMING_TRACE
    assert server.parent_id == "00f067aa0ba902b7"
    assert server.service == "liz-under-test"
    assert server.attributes["http.response.status_code"] == 200
    (invoke,) = turn.named("invoke_agent")
    assert invoke.name == "invoke_agent Morgan"
    assert invoke.parent_id == server.span_id
    assert invoke.attributes["gen_ai.agent.id"] == AGENT
    assert invoke.attributes["gen_ai.conversation.id"] == f"{AGENT}:ann"  # the room
    assert invoke.attributes["liz.route"] == "conversation"
    assert invoke.attributes["liz.outcome"] == "reply"
    own = [*turn.named("invoke_agent"), *turn.named("chat scripted-large")]
    assert {s.trace_id for s in own} == {INCOMING_TRACE}


async def test_each_chain_step_is_an_event_on_the_turns_span(turn: Receiver) -> None:
    (invoke,) = turn.named("invoke_agent")
    steps = invoke.events_named("liz.step")
    assert [step["liz.step.name"] for step in steps] == STANDARD_STEPS
    for step in steps:
        assert "liz.step.depth" not in step  # only steps of a nested chain have one
        assert 0 <= step["liz.step.own_ms"] <= step["liz.step.duration_ms"]
    # The onion: the first step holds every step after it.
    assert steps[0]["liz.step.duration_ms"] >= steps[-1]["liz.step.duration_ms"]
    assert turn.named("step ") == []


async def test_the_turns_children_are_the_llm_calls_and_the_memory_search(turn: Receiver) -> None:
    (invoke,) = turn.named("invoke_agent")
    children = turn.children(invoke)
    assert sorted(s.name for s in children) == ["chat scripted-large", "search_memory"]
    (search,) = turn.named("search_memory")
    assert search.attributes["gen_ai.operation.name"] == "search_memory"
    assert search.attributes["gen_ai.memory.store.id"] == "liz.facts"
    assert isinstance(search.attributes["gen_ai.memory.record.count"], int)
    # Recalling facts embedded the input, as the search's child.
    (query_embedding,) = turn.children(search)
    assert query_embedding.name == "embeddings scripted-embedding"
    assert query_embedding.attributes["liz.llm.purpose"] == "embed"


async def test_llm_calls_carry_the_genai_attributes_and_token_usage(turn: Receiver) -> None:
    chats = turn.named("chat ")
    purposes = {s.attributes["liz.llm.purpose"] for s in chats}
    assert {"reply", "extract"} <= purposes
    (reply,) = [s for s in chats if s.attributes["liz.llm.purpose"] == "reply"]
    assert reply.kind == 3  # SPAN_KIND_CLIENT
    assert reply.attributes["gen_ai.operation.name"] == "chat"
    # The endpoint names the provider: the scripted model answers at http://scripted/v1.
    assert reply.attributes["gen_ai.provider.name"] == "scripted"
    assert reply.attributes["server.address"] == "scripted"
    assert reply.attributes["gen_ai.request.model"] == "scripted-large"
    assert reply.attributes["gen_ai.response.model"] == "scripted-large"
    assert reply.attributes["gen_ai.usage.input_tokens"] > 0
    assert reply.attributes["gen_ai.usage.output_tokens"] > 0
    assert reply.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    embeds = turn.named("embeddings ")
    assert embeds and all(s.attributes["liz.llm.purpose"] == "embed" for s in embeds)
    assert all(s.attributes["gen_ai.usage.input_tokens"] > 0 for s in embeds)
    # The turn's span sums its own calls: the reply and the recall's embedding.
    (invoke,) = turn.named("invoke_agent")
    own = [s for s in [*chats, *embeds] if s.trace_id == invoke.trace_id]
    for direction in ("input", "output"):
        key = f"gen_ai.usage.{direction}_tokens"
        assert invoke.attributes[key] == sum(s.attributes[key] for s in own)


async def test_no_message_content_is_recorded_by_default(turn: Receiver) -> None:
    for received in turn.spans:
        for value in received.attributes.values():
            assert "Zanzibar" not in str(value), received.name
        assert "gen_ai.input.messages" not in received.attributes


async def test_message_content_is_recorded_when_the_environment_asks(
    receiver: Receiver, settings: Settings, agent: BaseAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    await one_turn(settings, agent)
    (reply,) = [s for s in receiver.named("chat ") if s.attributes["liz.llm.purpose"] == "reply"]
    assert "Zanzibar" in reply.attributes["gen_ai.input.messages"]
    assert "gen_ai.output.messages" in reply.attributes


async def test_a_500s_request_id_is_its_trace_id(
    receiver: Receiver, settings: Settings, agent: BaseAgent
) -> None:
    response = await one_turn(settings, agent, broken=True)
    assert response.status_code == 500
    request_id = response.json()["requestId"]
    (server,) = receiver.named("POST")
    assert request_id == server.trace_id
    assert server.status_code == 2  # STATUS_CODE_ERROR
    (invoke,) = receiver.named("invoke_agent")
    assert invoke.status_code == 2
    assert invoke.attributes["error.type"] == "RuntimeError"
    (exception,) = invoke.events_named("exception")
    assert exception["exception.message"] == "a bug in the user's own middleware"
    assert [step["liz.step.name"] for step in invoke.events_named("liz.step")] == ["_broken"]


async def test_json_log_lines_carry_the_trace_and_span_ids(
    receiver: Receiver, settings: Settings, agent: BaseAgent
) -> None:
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(log_formatter("json"))
    logger = logging.getLogger("liz.pipeline")
    logger.addHandler(handler)
    try:
        response = await one_turn(settings, agent, broken=True)
    finally:
        logger.removeHandler(handler)
    (line,) = [json.loads(text) for text in lines.getvalue().splitlines()]
    assert line["level"] == "ERROR" and line["logger"] == "liz.pipeline"
    assert "a bug in the user's own middleware" in line["exception"]
    assert line["trace_id"] == response.json()["requestId"]
    (invoke,) = receiver.named("invoke_agent")
    assert line["span_id"] == invoke.span_id


async def test_the_learning_job_is_a_trace_of_its_own_linked_to_its_turn(turn: Receiver) -> None:
    (learn,) = turn.named("learn facts")
    assert learn.parent_id == ""  # a root: any process may learn the job, at any time
    assert learn.trace_id != INCOMING_TRACE
    (stored_by,) = turn.named("invoke_agent")
    assert learn.links == [(INCOMING_TRACE, stored_by.span_id)]
    assert learn.attributes["liz.learning.jobs"] == 1
    learned = [s for s in turn.spans if s.trace_id == learn.trace_id]
    purposes = {s.attributes.get("liz.llm.purpose") for s in learned}
    assert "extract" in purposes
    (write,) = [s for s in learned if s.name == "upsert_memory"]
    assert write.parent_id == learn.span_id
    assert write.attributes["gen_ai.operation.name"] == "upsert_memory"


def test_a_tool_call_is_a_span_of_the_turn(
    receiver: Receiver, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from liz.testing.openai_server import ScriptedOpenAI, call_tool
    from tests.test_tools_calls import clerk_with_orders
    from tests.tools_world import say, served, tool_app

    monkeypatch.setenv("LIZ_FACTS_ENABLED", "false")  # only the turn's own calls
    scripted = ScriptedOpenAI()
    scripted.reply(call_tool("order_status", {"order_id": "A1"}), "Your order A1 has shipped.")
    with (
        scripted.serve() as llm_url,
        served(tool_app(clerk_with_orders([]), database_url, llm_url)) as client,
    ):
        assert client.post("/agent/input", json=say()).status_code == 200
    (tool,) = receiver.named("execute_tool order_status")
    assert tool.attributes["gen_ai.tool.name"] == "order_status"
    assert tool.attributes["liz.tool.ok"] is True
    (invoke,) = receiver.named("invoke_agent")
    assert tool.trace_id == invoke.trace_id
    chats = receiver.named("chat ")
    assert len(chats) == 2 and all(c.trace_id == invoke.trace_id for c in chats)


def test_a_denied_tool_call_is_one_failed_span_and_one_record(
    receiver: Receiver, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from liz.testing.openai_server import ScriptedOpenAI
    from tests.test_tools_approval import START, app_at, ask_for_refund, bearer, refunding_agent
    from tests.tools_world import served

    monkeypatch.setenv("LIZ_FACTS_ENABLED", "false")
    agent = refunding_agent([])
    scripted = ScriptedOpenAI()
    with scripted.serve() as url:
        pending = ask_for_refund(agent, database_url, scripted, url)["pendingApproval"]
        assert receiver.named("execute_tool") == []  # waiting for a person is no call yet
        scripted.reply("All right, no refund.")
        with served(app_at(agent, database_url, url, START)) as client:
            path = f"/agent/approvals/{pending['id']}"
            decided = client.post(path, json={"approve": False}, headers=bearer("ann"))
            assert decided.status_code == 200, decided.text
    (denied,) = receiver.named("execute_tool refund")
    assert denied.attributes["liz.tool.ok"] is False
    assert denied.attributes["error.type"] == "tool_error"
    assert denied.status_code == 2  # ERROR


async def test_the_learning_jobs_tokens_are_in_the_usage_table(
    turn: Receiver, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio
    from typer.testing import CliRunner

    from liz.cli import app as cli

    (extract,) = [s for s in turn.named("chat ") if s.attributes["liz.llm.purpose"] == "extract"]
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    result = await anyio.to_thread.run_sync(
        lambda: CliRunner().invoke(cli, ["usage", "--by", "model"])
    )
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split() for line in result.output.splitlines()[1:]}
    assert rows["scripted-small"][2] == str(extract.attributes["gen_ai.usage.input_tokens"])
    assert rows["scripted-small"][5] == str(extract.attributes["gen_ai.usage.output_tokens"])


async def test_your_own_middlewares_spans_join_the_turns_trace(
    receiver: Receiver, settings: Settings, agent: BaseAgent
) -> None:
    from opentelemetry import trace

    async def enrich(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        with trace.get_tracer("my-agent").start_as_current_span("look up the customer"):
            req.state["customer"] = "pro"
        await next()

    llm = scripted_model().llm_client()
    async with open_runtime(settings, llm_client=llm) as runtime:
        framework = build_framework(runtime).use(enrich)
        app = create_app(framework, {agent.agent_id: agent})
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            assert (await client.post("/agent/input", json=message())).status_code == 200
    await llm.close()
    (invoke,) = receiver.named("invoke_agent")
    (own,) = receiver.named("look up the customer")
    assert own.parent_id == invoke.span_id and own.trace_id == invoke.trace_id


async def test_a_plain_turn_is_three_spans(
    receiver: Receiver, settings: Settings, agent: BaseAgent
) -> None:
    facts_off = settings.facts.model_copy(update={"enabled": False})  # one chat call, no facts
    response = await one_turn(settings.model_copy(update={"facts": facts_off}), agent)
    assert response.status_code == 200
    names = sorted(s.name for s in receiver.spans)
    assert names == ["POST", "chat scripted-large", "invoke_agent Morgan"]


@pytest.mark.parametrize(
    ("base_url", "provider"),
    [
        ("https://api.openai.com/v1", "openai"),
        ("https://openrouter.ai/api/v1", "openrouter"),
        ("http://127.0.0.1:11434/v1", "ollama"),
        ("https://my-team.openai.azure.com/openai", "azure.ai.openai"),
        ("https://api.groq.com/openai/v1", "groq"),
        ("http://gpu-box:8000/v1", "gpu-box"),
    ],
)
def test_the_provider_is_named_from_the_endpoint(base_url: str, provider: str) -> None:
    import httpx as h

    from liz.observe.genai import provider_name

    url = h.URL(base_url)
    assert provider_name(url.host, url.port) == provider
