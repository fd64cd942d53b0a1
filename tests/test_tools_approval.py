"""Tools that need a person's approval: the pending reply, the decision, a restart between."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest

from liz.agent import BaseAgent
from liz.prompts.tokens import estimate_tokens
from liz.testing.clock import ManualClock
from liz.testing.openai_server import ScriptedOpenAI, call_tool
from liz.testing.prompt_cache import prompt_tokens
from liz.types import InputObject, InputSource
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

SECRET = "jwt-secret-for-tools-tests-" + "0123456789abcdef" * 3
SERVER_KEY = "server-key"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
TTL = 600.0


def bearer(user: str) -> dict[str, str]:
    token = jwt.encode({"sub": user, "exp": int(time.time()) + 600}, SECRET, algorithm="HS256")
    return {"authorization": f"Bearer {token}"}


def refunding_agent(refunds: list[tuple[str, float]]) -> BaseAgent:
    agent = tool_agent()

    @agent.tool(requires_approval=True)
    def refund(order_id: str, amount: float) -> str:
        """Refund an order; money leaves the shop."""
        refunds.append((order_id, amount))
        return f"refunded {amount} on {order_id}"

    return agent


def app_at(agent: BaseAgent, database_url: str, llm_url: str, now: datetime, **options: Any) -> Any:
    return tool_app(
        agent,
        database_url,
        llm_url,
        clock=ManualClock(now),
        liz_jwt_secret=SECRET,
        liz_api_key=SERVER_KEY,
        liz_tool_approval_ttl=TTL,
        **options,
    )


def ask_for_refund(
    agent: BaseAgent, database_url: str, scripted: ScriptedOpenAI, url: str
) -> dict[str, Any]:
    scripted.reply(
        call_tool("refund", {"order_id": "A1", "amount": 12.5}, text="I can refund that.")
    )
    with served(app_at(agent, database_url, url, START)) as client:
        response = client.post("/agent/input", json=say(), headers=bearer("ann"))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@dataclass
class Shop:
    """A shop whose model asked for a refund; ``asked`` is the reply with the pending call."""

    agent: BaseAgent
    scripted: ScriptedOpenAI
    url: str
    asked: dict[str, Any]
    refunds: list[tuple[str, float]]


@contextmanager
def refund_asked(database_url: str) -> Iterator[Shop]:
    refunds: list[tuple[str, float]] = []
    agent = refunding_agent(refunds)
    scripted = ScriptedOpenAI()
    with scripted.serve() as url:
        yield Shop(
            agent, scripted, url, ask_for_refund(agent, database_url, scripted, url), refunds
        )


def test_an_approved_call_runs_after_a_restart_and_the_model_writes_the_reply(
    database_url: str,
) -> None:
    refunds: list[tuple[str, float]] = []
    agent = refunding_agent(refunds)
    scripted = ScriptedOpenAI()
    with scripted.serve() as url:
        body = ask_for_refund(agent, database_url, scripted, url)
        pending = body["pendingApproval"]
        assert pending["tool"] == "refund"
        assert pending["arguments"] == {"order_id": "A1", "amount": 12.5}
        assert pending["text"] == body["text"] == "I can refund that."
        assert refunds == []  # never on the model's word alone

        scripted.reply("Done: 12.5 refunded on A1.")
        later = START + timedelta(seconds=60)
        with served(app_at(agent, database_url, url, later)) as client:
            path = f"/agent/approvals/{pending['id']}"
            assert (
                client.post(path, json={"approve": True}, headers=bearer("bob")).status_code == 403
            )
            assert (
                client.post(
                    "/agent/approvals/nope", json={"approve": True}, headers=bearer("ann")
                ).status_code
                == 404
            )
            bad = client.post(path, json={"approve": "yes"}, headers=bearer("ann"))
            assert bad.status_code == 400 and "approve" in bad.json()["error"]
            assert refunds == []

            decided = client.post(path, json={"approve": True}, headers=bearer("ann"))
            assert decided.status_code == 200, decided.text
            assert decided.json()["text"] == "Done: 12.5 refunded on A1."
            assert refunds == [("A1", 12.5)]
            assert scripted.chat_requests[-1].tool_results == ["refunded 12.5 on A1"]
            again = client.post(
                path, json={"approve": True}, headers={"authorization": f"Bearer {SERVER_KEY}"}
            )
            assert again.status_code == 409
            assert refunds == [("A1", 12.5)]

            # The conversation log has the decision's reply, and the next prompt sees the call.
            scripted.reply("Anything else?")
            client.post("/agent/input", json=say(text="Thanks"), headers=bearer("ann"))
            prompt = scripted.chat_requests[-1].prompt
            assert "Done: 12.5 refunded on A1." in prompt and "refunded 12.5 on A1" in prompt


@pytest.mark.parametrize("streaming", [False, True])
def test_when_the_model_fails_after_an_approved_call_the_decision_sent_again_gets_the_reply(
    database_url: str, streaming: bool
) -> None:
    with refund_asked(database_url) as shop:
        agent, scripted, url, refunds = shop.agent, shop.scripted, shop.url, shop.refunds
        path = f"/agent/approvals/{shop.asked['pendingApproval']['id']}"
        app = app_at(agent, database_url, url, START, liz_llm_max_retries=0)
        with served(app) as client:
            scripted.fail_next(503)
            if streaming:
                events = events_of(stream(client, path, {"approve": True}, headers=bearer("ann")))
                name, failure = events[-1]
                assert name == "error" and failure["status"] in (502, 503)
            else:
                response = client.post(path, json={"approve": True}, headers=bearer("ann"))
                assert response.status_code in (502, 503)
                failure = response.json()
            assert 'send {"approve": true} again' in failure["error"]
            assert refunds == [("A1", 12.5)]

            # The other decision is refused, and changes nothing.
            other = client.post(path, json={"approve": False}, headers=bearer("ann"))
            assert other.status_code == 409 and "approved" in other.json()["error"]

        scripted.reply("Done: 12.5 refunded on A1.")
        later = START + timedelta(seconds=TTL + 60)  # a kept decision outlives the approval's time
        with served(app_at(agent, database_url, url, later)) as client:
            again = client.post(path, json={"approve": True}, headers=bearer("ann"))
            assert again.status_code == 200, again.text
            assert again.json()["text"] == "Done: 12.5 refunded on A1."
            assert refunds == [("A1", 12.5)]  # run once, though decided twice
            assert scripted.chat_requests[-1].tool_results == ["refunded 12.5 on A1"]
            assert (
                client.post(path, json={"approve": True}, headers=bearer("ann")).status_code == 409
            )

            scripted.reply("Anything else?")
            client.post("/agent/input", json=say(text="Thanks"), headers=bearer("ann"))
            prompt = scripted.chat_requests[-1].prompt
            assert prompt.count("Done: 12.5 refunded on A1.") == 1
    assert refunds == [("A1", 12.5)]


@pytest.mark.parametrize("streaming", [False, True])
def test_a_denied_call_never_runs_and_the_model_is_told(database_url: str, streaming: bool) -> None:
    refunds: list[tuple[str, float]] = []
    agent = refunding_agent(refunds)
    scripted = ScriptedOpenAI()
    with scripted.serve() as url:
        pending = ask_for_refund(agent, database_url, scripted, url)["pendingApproval"]
        scripted.reply("All right, no refund.")
        with served(app_at(agent, database_url, url, START)) as client:
            path = f"/agent/approvals/{pending['id']}"
            if streaming:
                events = events_of(stream(client, path, {"approve": False}, headers=bearer("ann")))
                result = next(data for name, data in events if name == "tool_result")
                assert result["ok"] is False and "denied" in result["error"]
                assert events[-1][0] == "reply" and events[-1][1]["text"] == "All right, no refund."
            else:
                decided = client.post(path, json={"approve": False}, headers=bearer("ann"))
                assert decided.json()["text"] == "All right, no refund."
    assert refunds == []
    assert "denied" in scripted.chat_requests[-1].tool_results[0]["error"]


def test_an_expired_approval_is_404_and_changes_nothing(database_url: str) -> None:
    refunds: list[tuple[str, float]] = []
    agent = refunding_agent(refunds)
    scripted = ScriptedOpenAI()
    with scripted.serve() as url:
        pending = ask_for_refund(agent, database_url, scripted, url)["pendingApproval"]
        requests = len(scripted.chat_requests)
        too_late = START + timedelta(seconds=TTL + 1)
        with served(app_at(agent, database_url, url, too_late)) as client:
            path = f"/agent/approvals/{pending['id']}"
            for _ in range(2):
                response = client.post(path, json={"approve": True}, headers=bearer("ann"))
                assert response.status_code == 404 and "expired" in response.json()["error"]
    assert refunds == []
    assert len(scripted.chat_requests) == requests


@pytest.mark.anyio
async def test_the_twitter_loop_never_runs_a_tool_that_needs_approval(database_url: str) -> None:
    refunds: list[tuple[str, float]] = []
    agent = refunding_agent(refunds)
    scripted = ScriptedOpenAI()
    scripted.reply(call_tool("refund", {"order_id": "A1", "amount": 1}), "I cannot refund here.")
    with scripted.serve() as url:
        app = tool_app(agent, database_url, url)
        async with app.open() as framework:
            mention = InputObject(
                source=InputSource.TWITTER, agent_id="clerk", user_id="x:ann", text="refund me"
            )
            res = await framework.process(mention, agent)
    assert res.reply is not None and res.reply.text == "I cannot refund here."
    assert refunds == []
    assert "approval" in scripted.chat_requests[-1].tool_results[0]["error"]


def test_tool_events_pending_replies_and_decisions_match_the_api_document(
    database_url: str,
) -> None:
    refunds: list[tuple[str, float]] = []
    agent = refunding_agent(refunds)
    scripted = ScriptedOpenAI()
    with scripted.serve() as url:
        pending = ask_for_refund(agent, database_url, scripted, url)
        scripted.reply("Refunded.")
        with served(app_at(agent, database_url, url, START)) as client:
            document = client.get("/openapi.json", headers=bearer("ann")).json()
            matches(document, "AgentReply", pending)
            matches(document, "PendingApproval", pending["pendingApproval"])
            path = f"/agent/approvals/{pending['pendingApproval']['id']}"
            operation = document["paths"]["/agent/approvals/{approval_id}"]["post"]
            events = operation["responses"]["200"]["content"]["text/event-stream"]["x-liz-events"]
            response = stream(client, path, {"approve": True}, headers=bearer("ann"))
            seen = set()
            for name, data in events_of(response):
                matches(document, events[name]["$ref"].split("/")[-1], data)
                seen.add(name)
    assert {"tool_call", "tool_result", "reply"} <= seen


def test_a_decision_whose_reply_asks_for_another_approval_leaves_that_one_pending(
    database_url: str,
) -> None:
    with refund_asked(database_url) as shop:
        agent, scripted, url, refunds = shop.agent, shop.scripted, shop.url, shop.refunds
        first = shop.asked["pendingApproval"]
        scripted.reply(
            call_tool("refund", {"order_id": "B2", "amount": 3}, text="And B2?"), "Both done."
        )
        with served(app_at(agent, database_url, url, START)) as client:
            decided = client.post(
                f"/agent/approvals/{first['id']}", json={"approve": True}, headers=bearer("ann")
            )
            assert decided.status_code == 200, decided.text
            second = decided.json()["pendingApproval"]
            assert second["arguments"] == {"order_id": "B2", "amount": 3}
            assert refunds == [("A1", 12.5)]

            again = client.post(
                f"/agent/approvals/{second['id']}", json={"approve": True}, headers=bearer("ann")
            )
            assert again.status_code == 200, again.text
            assert again.json()["text"] == "Both done."
    assert refunds == [("A1", 12.5), ("B2", 3.0)]


def test_a_decided_turns_tokens_are_counted_in_the_usage_table(database_url: str) -> None:
    with refund_asked(database_url) as shop:
        shop.scripted.reply("Done: 12.5 refunded on A1.")
        with served(app_at(shop.agent, database_url, shop.url, START)) as client:
            pending = shop.asked["pendingApproval"]
            path = f"/agent/approvals/{pending['id']}"
            decided = client.post(path, json={"approve": True}, headers=bearer("ann"))
            assert decided.status_code == 200, decided.text
            usage = client.get(
                "/usage", params={"by": "user"}, headers={"authorization": f"Bearer {SERVER_KEY}"}
            )
    assert usage.status_code == 200, usage.text
    (ann,) = usage.json()["usage"]
    # The turn that asked and the decided turn that replied: one chat call each.
    assert ann["key"] == "ann" and ann["calls"] == len(shop.scripted.chat_requests) == 2
    # The scripted model reports tokens as liz estimates them (liz.testing.prompt_cache).
    assert ann["inputTokens"] == sum(prompt_tokens(r.body) for r in shop.scripted.chat_requests)
    said = ("I can refund that.", "Done: 12.5 refunded on A1.")
    assert ann["outputTokens"] == sum(estimate_tokens(text) for text in said)
