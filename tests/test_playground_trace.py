"""The trace of a turn: the LLM calls as sent, the route and why, the recalled facts, each
step's time; on ``res.trace`` for code, over HTTP only when asked (``?trace=1``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from liz.agent import BaseAgent
from liz.character import Character
from liz.config import Settings
from liz.facts.store import FactStore
from liz.http import create_app
from liz.pipeline import AgentFramework, AgentRequest, AgentResponse, Route, compose
from liz.routes import conversation
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from liz.types import InputObject, Next, RouteChoice
from tests.fixtures.facts import AGENT, USER, extraction, fact, seed

pytestmark = pytest.mark.anyio
STANDARD_STEPS = [
    "validate_input",
    "load_memories.load",
    "recall_facts.recall",
    "wrap_context",
    "create_memory",
    "extract_facts.extract",
    "router",
]


def body(text: str, agent: str = "business-advisor") -> dict[str, Any]:
    return {"input": {"agentId": agent, "userId": USER, "text": text}}


def sse_events(stream: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in stream.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


async def test_a_json_reply_carries_no_trace_unless_asked(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    scripted.reply("Know your margins.", "Know your costs.")
    plain = await client.post("/agent/input", json=body("Where to start?"))
    assert plain.status_code == 200 and "trace" not in plain.json()
    off = await client.post("/agent/input?trace=0", json=body("And then?"))
    assert off.status_code == 200 and "trace" not in off.json()


async def test_the_trace_holds_the_exact_messages_the_llm_got(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, agent: BaseAgent
) -> None:
    scripted.reply("Know your margins.")
    response = await client.post("/agent/input?trace=1", json=body("Where to start?"))
    assert response.status_code == 200, response.text
    reply = response.json()
    assert reply["text"] == "Know your margins."
    trace = reply["trace"]
    (call,) = trace["llmCalls"]
    (sent,) = scripted.chat_requests
    assert call["messages"] == sent.messages
    assert call["messages"][0] == {"role": "system", "content": agent.get_system_prompt()}
    assert "Where to start?" in call["messages"][-1]["content"]
    assert call["step"] == "router" and call["streamed"] is False and call["schema"] is None
    assert trace["route"] == {
        "name": "conversation",
        "chosenBy": "only_route",
        "confidence": None,
        "reasoning": None,
    }
    assert trace["recalledFacts"] == []
    assert [step["step"] for step in trace["steps"]] == STANDARD_STEPS
    for step in trace["steps"]:
        assert step["depth"] == 0
        assert 0 <= step["ownMs"] <= step["totalMs"]


async def test_the_routers_pick_is_traced_with_confidence_and_reasoning(
    runtime: Runtime, scripted: ScriptedOpenAI
) -> None:
    async def tell_joke(req: AgentRequest, res: AgentResponse) -> None:
        await res.send(await req.runtime.llm.text(req.context))

    agent = BaseAgent(Character(agent_id=AGENT, name="Ada", system="You are Ada."))
    agent.add_route(conversation)
    agent.add_route(Route("joke", "Tell a joke when asked for one.", tell_joke))
    choice = RouteChoice(route="joke", confidence=0.87, reasoning="The user asked for a joke.")
    scripted.reply(choice, "Why did the chicken cross the road?")
    res = await build_framework(runtime).process(
        InputObject(agent_id=AGENT, user_id=USER, text="Tell me a joke"), agent
    )
    assert res.reply is not None and res.reply.route == "joke"
    route = res.trace.route
    assert route is not None
    assert (route.name, route.chosen_by, route.confidence, route.reasoning) == (
        "joke",
        "router",
        0.87,
        "The user asked for a joke.",
    )
    router_call, joke_call = res.trace.llm_calls
    assert (router_call.schema, router_call.model) == ("RouteChoice", "scripted-small")
    assert "Tell a joke when asked for one." in router_call.messages[-1]["content"]
    assert joke_call.schema is None and joke_call.step == "router"


async def test_recalled_facts_are_traced_with_their_scores_and_learning_stays_out(
    runtime: Runtime, store: FactStore, scripted: ScriptedOpenAI, agent: BaseAgent
) -> None:
    runtime.facts = store
    await seed(
        store,
        scripted,
        fact("User likes to drink green tea"),
        fact("User owns a boat"),
        agent=agent.agent_id,
    )
    scripted.respond_with(lambda r: extraction() if r.schema_name else "Green tea it is!")
    res = await build_framework(runtime).process(
        InputObject(agent_id=agent.agent_id, user_id=USER, text="What should I drink, tea?"),
        agent,
    )
    await runtime.background.drain()
    (recalled,) = res.trace.recalled_facts
    assert recalled.text == "User likes to drink green tea"
    assert recalled.score is not None and 0 < recalled.score <= 1
    # The extraction after the reply went to the LLM, but it is not the turn's call.
    assert any(r.schema_name == "ExtractedFacts" for r in scripted.chat_requests[-2:])
    assert [call.schema for call in res.trace.llm_calls] == [None]


async def test_the_stream_sends_a_trace_event_before_the_reply_only_when_asked(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    headers = {"Accept": "text/event-stream"}
    scripted.reply("Cash is king.", "Cash is queen.")
    traced = await client.post("/agent/input?trace=true", json=body("Hi"), headers=headers)
    events = sse_events(traced.text)
    names = [name for name, _ in events]
    assert names[-2:] == ["trace", "reply"] and set(names[:-2]) == {"token"}
    trace = events[-2][1]
    assert trace["llmCalls"][0]["streamed"] is True
    assert "Hi" in trace["llmCalls"][0]["messages"][-1]["content"]
    assert events[-1][1]["text"] == "Cash is king."

    plain = await client.post("/agent/input", json=body("Hi again"), headers=headers)
    assert [name for name, _ in sse_events(plain.text)][-1] == "reply"
    assert "trace" not in [name for name, _ in sse_events(plain.text)]


async def test_a_bad_trace_value_is_a_clear_400(client: httpx.AsyncClient) -> None:
    response = await client.post("/agent/input?trace=yes-please", json=body("Hi"))
    assert response.status_code == 400
    assert response.json() == {"error": "trace must be 1 or 0 (true or false), got 'yes-please'"}


@pytest.fixture
async def playground_off(
    runtime: Runtime, agent: BaseAgent, settings: Settings
) -> AsyncIterator[httpx.AsyncClient]:
    runtime.settings = settings.model_copy(update={"liz_playground": False})
    app = create_app(build_framework(runtime), {agent.agent_id: agent})
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        yield http


async def test_with_the_playground_off_no_trace_is_given(
    playground_off: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    response = await playground_off.post("/agent/input?trace=1", json=body("Hi"))
    assert response.status_code == 403
    assert "LIZ_PLAYGROUND=false" in response.json()["error"]
    assert scripted.chat_requests == []


async def greet(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    await res.send("hello")
    await next()


async def shout(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    await next()


async def test_steps_of_a_nested_chain_are_timed_one_level_down(bare_runtime: Runtime) -> None:
    framework = AgentFramework(bare_runtime).use(shout, compose([greet]))
    agent = BaseAgent(Character(agent_id="a", name="A"))
    res = await framework.process(InputObject(agent_id="a", user_id="u", text="hi"), agent)
    assert [(s.step, s.depth) for s in res.trace.steps] == [
        ("shout", 0),
        ("compose.composed", 0),
        ("greet", 1),
    ]
