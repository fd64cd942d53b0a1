"""End to end over HTTP: facts told in one room reach the prompt many turns later in
another; a contradiction replaces the old preference in the prompt; history keeps both."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from liz.agent import BaseAgent
from liz.character import Character
from liz.facts.store import FactStore
from liz.http import create_app
from liz.routes import conversation
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from tests.fixtures.facts import AGENT, USER, decision, extraction, fact, plan

pytestmark = pytest.mark.anyio
FILLER_TURNS = 55  # 110 messages: the first exchange is out of load_memories' 100


class PretendModel:
    """Stands in for the LLM behind the scripted server: replies, extracts, reconciles."""

    def __call__(self, request: RecordedRequest) -> Any:
        said = request.prompt.split("<LATEST_EXCHANGE>")[-1]
        if request.schema_name == "ExtractedFacts":
            if "My name is Ada" in said:
                return extraction(
                    fact("User's name is Ada", "user", "identity", "name"),
                    fact("User likes to drink green tea", "user", "preferences", "drinks"),
                )
            if "switched to coffee" in said:
                return extraction(
                    fact(
                        "User likes to drink black coffee, not tea", "user", "preferences", "drinks"
                    )
                )
            return extraction()
        if request.schema_name == "ReconcilePlan":
            stored = re.search(r"(\d+)\. \[user\] User likes to drink green tea", request.prompt)
            if stored is None:
                return plan(decision(1, "ADD", text="User likes to drink black coffee, not tea"))
            return plan(
                decision(
                    1,
                    "DELETE",
                    int(stored.group(1)),
                    "User likes to drink black coffee, not tea",
                    ("preferences", "drinks"),
                )
            )
        return "Noted!"


def facts_block(prompt: str) -> str:
    if "<USER_FACTS>" not in prompt:
        return ""
    return prompt.split("<USER_FACTS>")[1].split("</USER_FACTS>")[0]


async def test_facts_follow_the_user_across_rooms_and_change_when_contradicted(
    runtime: Runtime, store: FactStore, scripted: ScriptedOpenAI
) -> None:
    runtime.facts = store
    scripted.respond_with(PretendModel())
    agent = BaseAgent(Character(agent_id=AGENT, name="Ada-bot", system="You are helpful."))
    agent.add_route(conversation)
    app = create_app(build_framework(runtime), {AGENT: agent})

    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost"
    ) as http:

        async def say(text: str, room: str) -> str:
            response = await http.post(
                "/agent/input",
                json={"input": {"agentId": AGENT, "userId": USER, "roomId": room, "text": text}},
            )
            assert response.status_code == 200, response.text
            await runtime.background.drain()  # learning happens after the reply
            return [r.prompt for r in scripted.chat_requests if r.schema_name is None][-1]

        await say("My name is Ada and I love green tea.", "kitchen")
        for turn in range(FILLER_TURNS):
            await say(f"Tell me about the weather, part {turn}", "kitchen")

        prompt = await say("Do you remember my name and what I like to drink?", "garden")
        assert "My name is Ada" not in prompt  # the raw message is long gone
        recalled = facts_block(prompt)
        assert "User's name is Ada" in recalled
        assert "User likes to drink green tea" in recalled

        await say("I switched to coffee: black coffee, no more tea for me.", "garden")
        prompt = await say("What do I like to drink these days?", "office")
        recalled = facts_block(prompt)
        assert "User likes to drink black coffee, not tea" in recalled
        assert "green tea" not in recalled

    everything = await store.list(AGENT, USER, include_retired=True)
    tea = next(f for f in everything if "green tea" in f.text)
    coffee = next(f for f in everything if "coffee" in f.text)
    assert not tea.active and coffee.active
    assert [(h.event.value, h.old_text) for h in await store.history(tea.id, AGENT, USER)] == [
        ("ADD", None),
        ("DELETE", "User likes to drink green tea"),
    ]
    assert [h.new_text for h in await store.history(coffee.id, AGENT, USER)] == [
        "User likes to drink black coffee, not tea"
    ]
