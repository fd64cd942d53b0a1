"""Tools in Python, called by the model over function calling, through a served app."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from liz.testing.openai_server import ScriptedOpenAI, call_tool, call_tools
from liz.tools import ToolContext
from tests.tools_world import (
    _no_facts,
    events_of,
    matches,
    say,
    served,
    stream,
    tool_agent,
    tool_app,
)

__all__ = ["_no_facts"]


class Order(BaseModel):
    id: str
    status: str


def clerk_with_orders(seen: list[Any]) -> Any:
    agent = tool_agent()

    @agent.tool
    async def order_status(ctx: ToolContext, order_id: str) -> Order:
        """Look up an order.

        Args:
            order_id: The order's number, as the user gives it.
        """
        seen.append((ctx.user_id, order_id))
        return Order(id=order_id, status="shipped")

    return agent


def test_one_call_runs_the_tool_and_the_model_answers_with_its_result(database_url: str) -> None:
    scripted = ScriptedOpenAI()
    scripted.reply(call_tool("order_status", {"order_id": "A1"}), "Your order A1 has shipped.")
    seen: list[Any] = []
    with (
        scripted.serve() as llm_url,
        served(tool_app(clerk_with_orders(seen), database_url, llm_url)) as client,
    ):
        response = client.post("/agent/input", json=say())
        assert response.status_code == 200, response.text
        assert response.json()["text"] == "Your order A1 has shipped."
        assert seen == [("ann", "A1")]
        first, second = scripted.chat_requests
        offered = first.body["tools"][0]["function"]
        assert offered["name"] == "order_status"
        assert offered["description"] == "Look up an order."
        assert offered["parameters"]["properties"]["order_id"]["description"].startswith(
            "The order"
        )
        assert "ctx" not in offered["parameters"]["properties"]
        assert second.tool_results == [{"id": "A1", "status": "shipped"}]

        # The next turn's prompt knows what was done.
        scripted.reply("You are welcome.")
        assert client.post("/agent/input", json=say(text="Thanks")).status_code == 200
        assert "order_status" in scripted.chat_requests[-1].prompt
        assert "shipped" in scripted.chat_requests[-1].prompt


def test_a_streamed_turn_sends_tool_call_and_tool_result_events_among_the_tokens(
    database_url: str,
) -> None:
    scripted = ScriptedOpenAI()
    scripted.reply(
        call_tool("order_status", {"order_id": "B2"}, text="Let me look."),
        "It has shipped.",
    )
    with (
        scripted.serve() as llm_url,
        served(tool_app(clerk_with_orders([]), database_url, llm_url)) as client,
    ):
        events = events_of(stream(client, "/agent/input?trace=1", say()))
        document = client.get("/openapi.json").json()
    described = document["paths"]["/agent/input"]["post"]["responses"]["200"]["content"]
    for name, data in events:  # each event as the API document describes it
        ref = described["text/event-stream"]["x-liz-events"][name]["$ref"]
        matches(document, ref.split("/")[-1], data)
    names = [name for name, _ in events]
    call = next(data for name, data in events if name == "tool_call")
    result = next(data for name, data in events if name == "tool_result")
    assert call["name"] == "order_status" and call["arguments"] == {"order_id": "B2"}
    assert result == {"id": call["id"], "ok": True, "result": {"id": "B2", "status": "shipped"}}
    assert names.index("tool_call") < names.index("tool_result") < names.index("reply")
    assert "token" in names[: names.index("tool_call")]  # "Let me look." came first
    assert "token" in names[names.index("tool_result") :]
    assert events[-1] == ("reply", events[-1][1]) and events[-1][1]["text"] == "It has shipped."
    trace = next(data for name, data in events if name == "trace")
    [traced] = trace["toolCalls"]
    assert traced["name"] == "order_status" and traced["ok"] and "durationMs" in traced


@pytest.mark.parametrize("streaming", [False, True])
def test_calls_in_one_answer_run_concurrently(database_url: str, streaming: bool) -> None:
    # Each tool waits for the other to have started: run one after the other, both time out.
    started: dict[str, asyncio.Event] = {}
    agent = tool_agent()

    async def meet(name: str, other: str) -> str:
        started.setdefault(name, asyncio.Event()).set()
        await asyncio.wait_for(started.setdefault(other, asyncio.Event()).wait(), 5)
        return f"{name} met {other}"

    @agent.tool
    async def stock(item: str) -> str:
        """Stock of an item."""
        return await meet("stock", "price")

    @agent.tool
    async def price(item: str) -> str:
        """Price of an item."""
        return await meet("price", "stock")

    scripted = ScriptedOpenAI()
    scripted.reply(call_tools(("stock", {"item": "tea"}), ("price", {"item": "tea"})), "Done.")
    with (
        scripted.serve() as llm_url,
        served(tool_app(agent, database_url, llm_url, liz_tool_timeout=10)) as client,
    ):
        if streaming:
            events = events_of(stream(client, "/agent/input", say()))
            assert [d["ok"] for n, d in events if n == "tool_result"] == [True, True]
        else:
            assert client.post("/agent/input", json=say()).status_code == 200
    assert scripted.chat_requests[1].tool_results == ["stock met price", "price met stock"]


class NotJSON:
    pass


@pytest.mark.parametrize("streaming", [False, True])
def test_what_goes_wrong_in_a_call_goes_back_to_the_model_and_the_turn_goes_on(
    database_url: str, streaming: bool
) -> None:
    agent = tool_agent()

    @agent.tool
    def refund(order_id: str, amount: float) -> str:
        """Refund an order."""
        raise RuntimeError("the payment service is down")

    @agent.tool
    def odd() -> Any:
        """Return something that is not JSON."""
        return NotJSON()

    @agent.tool
    async def slow() -> str:
        """Take too long."""
        await asyncio.sleep(30)
        return "late"

    scripted = ScriptedOpenAI()
    scripted.reply(
        call_tools(
            ("refund", {"order_id": "A1", "amount": 5}),
            ("refund", {"order_id": "A1", "amount": "lots"}),
            ("refund", "not json {"),
            ("teleport", {}),
            ("odd", {}),
            ("slow", {}),
        ),
        "Sorry, I could not do that.",
    )
    with (
        scripted.serve() as llm_url,
        served(tool_app(agent, database_url, llm_url, liz_tool_timeout=0.2)) as client,
    ):
        if streaming:
            events = events_of(stream(client, "/agent/input", say()))
            assert events[-1][0] == "reply"
            assert [d["ok"] for n, d in events if n == "tool_result"] == [False] * 6
        else:
            response = client.post("/agent/input", json=say())
            assert response.status_code == 200
            assert response.json()["text"] == "Sorry, I could not do that."
    errors = [result["error"] for result in scripted.chat_requests[1].tool_results]
    assert "RuntimeError: the payment service is down" in errors[0]
    assert "amount" in errors[1] and "number" in errors[1]
    assert "JSON object" in errors[2]
    assert "no tool named 'teleport'" in errors[3] and "refund" in errors[3]
    assert "not JSON" in errors[4]
    assert "did not finish within 0.2 seconds" in errors[5]


@pytest.mark.parametrize("streaming", [False, True])
def test_the_step_limit_ends_a_model_that_never_stops_calling(
    database_url: str, streaming: bool
) -> None:
    agent = tool_agent()
    calls: list[int] = []

    @agent.tool
    def again() -> int:
        """Once more."""
        calls.append(1)
        return len(calls)

    scripted = ScriptedOpenAI()
    scripted.respond_with(lambda request: call_tool("again"))
    with (
        scripted.serve() as llm_url,
        served(tool_app(agent, database_url, llm_url, liz_tool_max_steps=3)) as client,
    ):
        if streaming:
            text = events_of(stream(client, "/agent/input", say()))[-1][1]["text"]
        else:
            text = client.post("/agent/input", json=say()).json()["text"]
    assert "limit of 3 tool steps" in text
    assert len(calls) == 3 and len(scripted.chat_requests) == 3
