"""Prompts laid out for the provider's prompt cache, and the scripted server counting it.

The character and the tools come first and are the same for every turn of every user;
the conversation follows, then the per-turn parts (recalled facts, the new input). The
scripted server reports ``cached_tokens`` as OpenAI's prefix cache: the longest prefix
shared with an earlier request to the same model, in 128-token steps, from 1,024 tokens.
"""

from __future__ import annotations

import itertools
import json
import math
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.routing import Mount

from liz.agent import BaseAgent
from liz.character import Character
from liz.config import Settings
from liz.facts.store import FactStore
from liz.llm import LLMClient
from liz.llm.endpoint import OPENROUTER_BASE_URL
from liz.routes import Route, conversation, converse
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.clock import ManualClock
from liz.testing.openai_requests import RecordedRequest
from liz.testing.openai_server import ScriptedOpenAI
from liz.testing.prompt_cache import rendered_prompt
from liz.testing.scripted_model import answer
from liz.types import InputObject
from tests.fixtures.facts import fact, seed

pytestmark = pytest.mark.anyio
on_sqlite = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
STABLE_END = "</AGENT_CONTEXT>"


# -- the scripted server's cached tokens ------------------------------------------------


async def cached_and_prompt(scripted: ScriptedOpenAI, model: str, text: str) -> tuple[int, int]:
    """Send ``text`` as one user message; the (cached, prompt) tokens the server reported."""
    async with scripted.openai_client() as client:
        completion = await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": text}]
        )
    usage = completion.usage
    assert usage is not None and usage.prompt_tokens_details is not None
    return usage.prompt_tokens_details.cached_tokens or 0, usage.prompt_tokens


def words(tokens: int, seed: str) -> str:
    """Text of ``tokens`` tokens as the server counts them (four bytes each), all ASCII."""
    return (seed * tokens * 4)[: tokens * 4]


async def test_cached_tokens_are_the_shared_prefix_in_128_token_steps_from_1024() -> None:
    scripted = ScriptedOpenAI()
    scripted.respond_with(lambda request: "ok")
    # "user: " and a newline around the text: 7 bytes more than the text itself.
    short = words(1000, "bread ")
    assert await cached_and_prompt(scripted, "m", short) == (0, math.ceil((4000 + 7) / 4))
    assert (await cached_and_prompt(scripted, "m", short))[0] == 0  # under 1,024 tokens

    long = words(1300, "flour ")
    assert (await cached_and_prompt(scripted, "m", long))[0] == 0  # first seen
    assert (await cached_and_prompt(scripted, "m", long))[0] == 1280  # 1,301.75 whole: 10 steps

    # Shares its first 1,200 tokens (and "user: ") with the one before: 9 whole steps.
    forked = long[:4800] + words(400, "sugar ")
    assert (await cached_and_prompt(scripted, "m", forked))[0] == 1152
    # The cache is per model.
    assert (await cached_and_prompt(scripted, "other-model", long))[0] == 0
    # A prompt that differs in its first block shares nothing.
    assert (await cached_and_prompt(scripted, "m", "x" + long))[0] == 0


async def test_tools_and_the_answers_schema_are_read_before_the_messages() -> None:
    body: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
        "tools": [{"type": "function", "function": {"name": "refund"}}],
        "response_format": {"type": "json_object"},
    }
    prompt = rendered_prompt(body)
    assert prompt.index("refund") < prompt.index("json_object") < prompt.index("system: S")
    assert prompt.endswith("system: S\nuser: U\n")


# -- the layout ---------------------------------------------------------------------------


def router_or_reply(request: RecordedRequest) -> Any:
    """The scripted model's pick of a route; a plain reply (no tool call) to the rest."""
    return answer(request) if request.schema_name else "Sure."


def make_agent() -> BaseAgent:
    """Six lines of each list, so the character is sampled; a tool; two routes."""
    character = Character.model_validate(
        {
            "agentId": "ada-bot",
            "name": "Ada",
            "system": "You are Ada, a kind helper for bakers.",
            "bio": [f"Ada baked bread in town number {n}." for n in range(6)],
            "lore": [f"Ada once fixed oven number {n}." for n in range(6)],
            "topics": ["bread", "cash", "ovens", "hiring", "rent", "markets"],
            "style": {"all": [f"rule {n}" for n in range(6)]},
        }
    )
    agent = BaseAgent(character)
    agent.add_route(conversation)
    agent.add_route(Route(name="advice", description="Give practical advice.", handler=converse))

    def oven_temperature(bread: str) -> str:
        """The oven temperature for a bread.

        Args:
            bread: The kind of bread.
        """
        return "230 C"

    agent.add_tool(oven_temperature)
    return agent


def stable_part(request: RecordedRequest) -> str:
    """The request's JSON body, as sent, up to the end of the character."""
    body = json.dumps(request.body, ensure_ascii=False)
    assert STABLE_END in body
    return body[: body.index(STABLE_END) + len(STABLE_END)]


@on_sqlite
async def test_the_character_and_tools_are_the_same_first_bytes_for_every_turn_and_user(
    database_url: str, engine: AsyncEngine, llm: LLMClient, scripted: ScriptedOpenAI
) -> None:
    scripted.respond_with(router_or_reply)
    settings = Settings(_env_file=None, database_url=database_url)  # type: ignore[call-arg]
    clock = ManualClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    runtime = Runtime(settings=settings, engine=engine, llm_client=llm, clock=clock)
    framework = build_framework(runtime)
    agent = make_agent()
    for turn in range(4):
        for user in ("ann", "bob"):
            await clock.advance(seconds=30)
            text = f"{user} asks question {turn} about rye"
            res = await framework.process(
                InputObject(agent_id="ada-bot", user_id=user, text=text), agent
            )
            assert res.reply is not None, res.error
    await runtime.background.drain()

    replies = [r for r in scripted.chat_requests if r.schema_name is None]
    routes = [r for r in scripted.chat_requests if r.schema_name == "RouteChoice"]
    assert len(replies) == len(routes) == 8
    for requests in (replies, routes):
        assert len({stable_part(r) for r in requests}) == 1
    reply_start = stable_part(replies[0])
    # The tools lead the body; the character is whole in the stable part; nothing of a
    # user or of a turn is in it.
    assert reply_start.index('"tools"') < reply_start.index('"messages"')
    assert "oven_temperature" in reply_start and "You are Ada" in reply_start
    assert "ann" not in reply_start and "rye" not in reply_start
    # After the character: the conversation, then the new input.
    last = replies[-1].prompt
    assert last.index(STABLE_END) < last.index("<PREVIOUS_CONVERSATION>")
    assert last.index("</PREVIOUS_CONVERSATION>") < last.index("<CURRENT_USER_INPUT>")
    # Each later turn of a user repeats the earlier one's prompt up to its new messages.
    ann = [rendered_prompt(r.body) for r in replies[0::2]]
    for earlier, later in itertools.pairwise(ann):
        shared = earlier.index("</PREVIOUS_CONVERSATION>")
        assert later[:shared] == earlier[:shared]


@on_sqlite
async def test_the_same_facts_reach_the_prompt_after_the_conversation(
    database_url: str,
    engine: AsyncEngine,
    llm: LLMClient,
    scripted: ScriptedOpenAI,
    store: FactStore,
) -> None:
    agent = make_agent()
    await seed(
        store,
        scripted,
        fact("User's bakery is in Lisbon"),
        fact("User bakes rye bread on Saturdays"),
        user="ann",
        agent=agent.agent_id,
    )
    text = "Which bread should I bake in my Lisbon bakery on Saturdays?"
    expected = [f.text for f in await store.search(text, agent.agent_id, "ann")]
    assert expected  # the question matches what was seeded

    scripted.respond_with(router_or_reply)
    settings = Settings(_env_file=None, database_url=database_url)  # type: ignore[call-arg]
    runtime = Runtime(settings=settings, engine=engine, llm_client=llm, facts=store)
    res = await build_framework(runtime).process(
        InputObject(agent_id=agent.agent_id, user_id="ann", text=text), agent
    )
    await runtime.background.drain()
    assert res.reply is not None, res.error
    (reply,) = [r for r in scripted.chat_requests if r.schema_name is None]
    prompt = reply.prompt
    block = prompt.split("<USER_FACTS>")[1].split("</USER_FACTS>")[0]
    assert [line[2:] for line in block.splitlines() if line.startswith("- ")] == expected
    assert prompt.index("</PREVIOUS_CONVERSATION>") < prompt.index("<USER_FACTS>")
    assert prompt.index("</USER_FACTS>") < prompt.index("<CURRENT_USER_INPUT>")


# -- Anthropic's breakpoint ---------------------------------------------------------------


def openrouter_client(scripted: ScriptedOpenAI, model: str) -> LLMClient:
    """An LLMClient whose endpoint is OpenRouter's URL, answered by ``scripted``."""
    app = Starlette(routes=[Mount("/api", app=scripted.app)])  # OpenRouter's /api/v1/...
    openai = AsyncOpenAI(
        api_key="scripted-key",
        base_url=OPENROUTER_BASE_URL,
        http_client=httpx.AsyncClient(transport=httpx.ASGITransport(app=app)),
    )
    return LLMClient(openai, small_model=model, large_model=model, embedding_model="e")


@on_sqlite
@pytest.mark.parametrize("model", ["anthropic/claude-sonnet-4.5", "openai/gpt-4o"])
async def test_anthropic_models_through_openrouter_get_a_breakpoint_where_the_character_ends(
    database_url: str, engine: AsyncEngine, model: str
) -> None:
    scripted = ScriptedOpenAI()
    scripted.respond_with(router_or_reply)
    settings = Settings(_env_file=None, database_url=database_url)  # type: ignore[call-arg]
    async with openrouter_client(scripted, model) as llm:
        runtime = Runtime(settings=settings, engine=engine, llm_client=llm)
        said = InputObject(agent_id="ada-bot", user_id="ann", text="Rye or spelt?")
        res = await build_framework(runtime).process(said, make_agent())
        await runtime.background.drain()
    assert res.reply is not None, res.error
    chats = [r for r in scripted.requests if r.path.endswith("/chat/completions")]
    assert len(chats) == 2  # the router's and the reply's
    for request in chats:
        (user,) = [m for m in request.messages if m["role"] == "user"]
        if model.startswith("openai/"):
            assert isinstance(user["content"], str)  # OpenAI caches without marks
            continue
        stable, rest = user["content"]
        assert stable["cache_control"] == {"type": "ephemeral"}
        assert stable["text"].endswith(STABLE_END) and "Rye or spelt?" not in stable["text"]
        assert "cache_control" not in rest and "Rye or spelt?" in rest["text"]
