"""recall_facts and extract_facts in the standard chain: facts reach the prompt; learning
happens after the reply, in the background, retried, and never fails a request."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from liz.agent import BaseAgent
from liz.character import Character
from liz.facts.store import FactStore
from liz.middleware import extract_facts, load_memories, recall_facts, validate_input, wrap_context
from liz.middleware.create_memory import create_memory
from liz.middleware.router import router
from liz.pipeline import AgentFramework
from liz.routes import conversation
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import RecordedRequest, ScriptedError, ScriptedOpenAI
from liz.types import InputObject
from tests.fixtures.facts import AGENT, USER, extraction, fact, seed

pytestmark = pytest.mark.anyio


def make_agent() -> BaseAgent:
    agent = BaseAgent(Character(agent_id=AGENT, name="Ada", system="You are Ada."))
    agent.add_route(conversation)
    return agent


def reply_prompts(scripted: ScriptedOpenAI) -> list[str]:
    return [r.prompt for r in scripted.chat_requests if r.schema_name is None]


def say(text: str, room: str = "room-1") -> InputObject:
    return InputObject(agent_id=AGENT, user_id=USER, room_id=room, text=text)


def chain(attempts: int = 3) -> list[Any]:
    return [
        validate_input,
        load_memories(),
        recall_facts(),
        wrap_context,
        create_memory,
        extract_facts(attempts=attempts, wait_seconds=0),
        router,
    ]


async def test_recalled_facts_are_in_the_prompt_the_llm_gets(
    runtime: Runtime, store: FactStore, scripted: ScriptedOpenAI
) -> None:
    runtime.facts = store
    await seed(store, scripted, fact("User likes to drink green tea"), fact("User owns a boat"))
    scripted.respond_with(lambda r: extraction() if r.schema_name else "Green tea it is!")
    res = await build_framework(runtime).process(say("What should I drink today?"), make_agent())
    assert res.reply is not None and res.reply.text == "Green tea it is!"
    (prompt,) = reply_prompts(scripted)
    facts_block = prompt.split("<USER_FACTS>")[1].split("</USER_FACTS>")[0]
    assert "User likes to drink green tea" in facts_block
    assert "boat" not in facts_block


async def test_without_a_facts_store_both_steps_pass_through(
    runtime: Runtime, scripted: ScriptedOpenAI
) -> None:
    scripted.reply("Hello!")
    res = await AgentFramework(runtime).use(*chain()).process(say("hi"), make_agent())
    assert res.reply is not None and res.reply.text == "Hello!"
    await runtime.background.drain()
    assert scripted.embedding_requests == [] and len(scripted.chat_requests) == 1


async def test_facts_are_learned_after_the_reply_from_the_users_message(
    runtime: Runtime, store: FactStore, scripted: ScriptedOpenAI
) -> None:
    runtime.facts = store

    def answer(request: RecordedRequest) -> Any:
        if request.schema_name == "ExtractedFacts":
            return extraction(fact("User's name is Ada", "user", "identity", "name"))
        return "Nice to meet you, Ada."

    scripted.respond_with(answer)
    framework = AgentFramework(runtime).use(*chain())
    res = await framework.process(say("Hi, I'm Ada"), make_agent())
    assert res.reply is not None
    await runtime.background.drain()
    (learned,) = await store.list(AGENT, USER)
    assert learned.text == "User's name is Ada" and learned.source_memory_id is not None
    extract_request = next(r for r in scripted.chat_requests if r.schema_name == "ExtractedFacts")
    assert "user: Hi, I'm Ada" in extract_request.prompt
    assert "assistant: Nice to meet you, Ada." in extract_request.prompt


async def test_a_failed_extraction_is_retried_in_the_background(
    runtime: Runtime, store: FactStore, scripted: ScriptedOpenAI
) -> None:
    runtime.facts = store
    extractions = 0

    def answer(request: RecordedRequest) -> Any:
        nonlocal extractions
        if request.schema_name != "ExtractedFacts":
            return "Noted."
        extractions += 1
        if extractions <= 2:  # the SDK's own retry fails too: the first attempt fails
            return ScriptedError(503, "overloaded")
        return extraction(fact("User lives in Turku"))

    scripted.respond_with(answer)
    res = await AgentFramework(runtime).use(*chain()).process(say("I live in Turku"), make_agent())
    assert res.reply is not None and res.error is None
    await runtime.background.drain()
    assert [f.text for f in await store.list(AGENT, USER)] == ["User lives in Turku"]
    assert extractions == 3


async def test_an_extraction_that_keeps_failing_is_logged_never_surfaced(
    runtime: Runtime,
    store: FactStore,
    scripted: ScriptedOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    runtime.facts = store
    scripted.respond_with(lambda r: "not json at all" if r.schema_name else "Sure.")
    with caplog.at_level(logging.ERROR, logger="middleware.extract_facts"):
        res = (
            await AgentFramework(runtime)
            .use(*chain(attempts=2))
            .process(say("I live in Turku"), make_agent())
        )
        await runtime.background.drain()
    assert res.reply is not None and res.reply.text == "Sure." and res.error is None
    assert "could not extract facts" in caplog.text and "after 2 attempts" in caplog.text
    assert await store.list(AGENT, USER) == []
    assert sum(r.schema_name == "ExtractedFacts" for r in scripted.chat_requests) == 4


async def test_a_failed_recall_is_logged_and_the_agent_still_answers(
    runtime: Runtime,
    store: FactStore,
    scripted: ScriptedOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await seed(store, scripted, fact("User likes to drink green tea"))
    async with scripted.llm_client(embedding_model="another-model") as other:
        runtime.facts = FactStore(store.sessions, other, engine=store.engine)
        scripted.respond_with(lambda r: extraction() if r.schema_name else "Hello!")
        with caplog.at_level(logging.WARNING, logger="middleware.recall_facts"):
            res = (
                await AgentFramework(runtime)
                .use(*chain())
                .process(say("What do I drink?"), make_agent())
            )
        await runtime.background.drain()
    assert res.reply is not None and res.reply.text == "Hello!"
    assert "liz facts reindex" in caplog.text
    assert "<USER_FACTS>" not in reply_prompts(scripted)[-1]


async def test_an_extraction_no_retry_can_fix_is_tried_once(
    runtime: Runtime,
    store: FactStore,
    scripted: ScriptedOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await seed(store, scripted, fact("User likes to drink green tea"))
    async with scripted.llm_client(embedding_model="another-model") as other:
        runtime.facts = FactStore(store.sessions, other, engine=store.engine)
        scripted.respond_with(
            lambda r: extraction(fact("User drinks green tea daily")) if r.schema_name else "Hi!"
        )
        with caplog.at_level(logging.ERROR, logger="middleware.extract_facts"):
            await AgentFramework(runtime).use(*chain()).process(say("Tea daily!"), make_agent())
            await runtime.background.drain()
    assert "liz facts reindex" in caplog.text and "after 1 attempts" in caplog.text
    assert sum(r.schema_name == "ExtractedFacts" for r in scripted.chat_requests) == 2  # seed + 1
    assert [f.text for f in await store.list(AGENT, USER)] == ["User likes to drink green tea"]
