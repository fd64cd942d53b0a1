"""The Twitter loop runs the app's own chain: the same middleware as HTTP and chat."""

from __future__ import annotations

from typing import Any

import pytest

from liz import App, BaseAgent, Character
from liz.pipeline import AgentRequest, AgentResponse
from liz.routes import standard_routes
from liz.runtime.services import Runtime
from liz.testing.clock import ManualClock
from liz.testing.fake_twitter import FakeTwitter
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI
from liz.twitter.bot import TwitterBot
from liz.twitter.settings import TwitterSettings
from liz.types import Next

pytestmark = pytest.mark.anyio


async def sign_replies(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    await next()
    if res.reply is not None:
        res.reply.text = f"{res.reply.text} #{req.input.source.value.lower()}"


def answer(request: RecordedRequest) -> str | dict[str, Any]:
    if request.schema_name == "ShouldRespond":
        return {"decision": "RESPOND", "reason": "a question"}
    if request.schema_name is not None:
        return {"facts": []}
    return "Green tea, always."


async def test_the_bot_replies_through_the_apps_middleware(
    runtime: Runtime, scripted: ScriptedOpenAI
) -> None:
    scripted.respond_with(answer)
    agent = BaseAgent(Character(agent_id="ada", name="Ada", system="You are Ada, a tea lover."))
    for route in standard_routes():
        agent.add_route(route)
    app = App([agent]).use(sign_replies)
    clock = ManualClock()
    x = FakeTwitter(username="ada_bot", clock=clock)
    mention = x.tweet_as("bob", "@ada_bot which tea today?")
    settings = TwitterSettings(_env_file=None, transport="fake", post_interval_hours=4)  # type: ignore[call-arg]
    bot = TwitterBot(agent, app.framework(runtime), x, settings, clock=clock)
    await bot.start()
    try:
        await clock.wait_for_sleepers(2)
    finally:
        await bot.stop()
    assert [(t.in_reply_to_id, t.text) for t in x.posts] == [
        (mention.id, "Green tea, always. #twitter")
    ]
