"""The runtime starts the learning worker and stops it cleanly: a try still under way at
shutdown is cancelled and its job handed back, and the next process learns it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from liz.learning_queue.health import learning_backlog
from liz.middleware import create_memory, extract_facts, router, validate_input, wrap_context
from liz.pipeline import AgentFramework
from liz.runtime.bootstrap import open_runtime
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from liz.types import InputObject
from tests.learning_world import AGENT, Brain, fact_text, make_agent, process_settings

pytestmark = pytest.mark.anyio


class HeldBrain:
    """Extraction waits at ``gate`` until it opens."""

    def __init__(self) -> None:
        self.brain = Brain()
        self.gate = asyncio.Event()
        self.waiting = asyncio.Event()

    async def __call__(self, request: RecordedRequest) -> Any:
        if request.schema_name == "ExtractedFacts":
            self.waiting.set()
            await self.gate.wait()
        return self.brain(request)


async def test_shutdown_hands_a_try_under_way_back_to_the_queue(
    database_url: str, scripted: ScriptedOpenAI
) -> None:
    held = HeldBrain()
    scripted.respond_with(held)
    settings = process_settings(database_url, shutdown_seconds=0.2)
    # Should shutdown wait for the try after all, this opens the gate rather than hang.
    loop = asyncio.get_running_loop()
    fallback = loop.call_later(30, held.gate.set)
    async with scripted.llm_client() as llm:
        async with open_runtime(settings, llm_client=llm) as rt:
            framework = AgentFramework(rt).use(
                validate_input, wrap_context, create_memory, extract_facts(), router
            )
            said = InputObject(agent_id=AGENT, user_id="ann", text="I keep bees")
            res = await framework.process(said, make_agent())
            assert res.reply is not None
            await asyncio.wait_for(held.waiting.wait(), timeout=30)
        assert not held.gate.is_set()  # shut down while the extraction was still held
        assert (await learning_backlog(rt))["pending"] == 1

        held.gate.set()
        async with open_runtime(settings, llm_client=llm) as rt:
            await rt.learning.work_due()
            assert rt.facts is not None
            assert [f.text for f in await rt.facts.list(AGENT, "ann")] == [fact_text("I keep bees")]
            assert (await learning_backlog(rt))["pending"] == 0
    fallback.cancel()
