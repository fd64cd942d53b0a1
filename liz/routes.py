"""The standard routes: talk with the user, and write a new post.

A route produces the reply's text; ``create_memory`` keeps it in the conversation log.
"""

from __future__ import annotations

from liz.pipeline import AgentRequest, AgentResponse, Route
from liz.tools.turn import answer_with_tools


async def converse(req: AgentRequest, res: AgentResponse) -> None:
    if req.agent.tools:
        await answer_with_tools(req, res)
        return
    system = req.agent.get_system_prompt()
    if res.streaming:
        parts = []
        async for delta in req.runtime.llm.stream(
            req.context, system=system, image_urls=req.input.image_urls
        ):
            parts.append(delta)
            await res.emit(delta)
        text = "".join(parts)
    else:
        text = await req.runtime.llm.text(
            req.context, system=system, image_urls=req.input.image_urls
        )
    await res.send(text)


async def write_tweet(req: AgentRequest, res: AgentResponse) -> None:
    character = req.agent.character
    prompt = req.agent.templates.render(
        "tweet.j2",
        name=character.name,
        agent_context=req.agent.get_agent_context(req.runtime.clock.now().date()),
        post_style=character.style.all + character.style.post,
        recent_posts=[m.text for m in req.memories if m.generator == "llm"][:5],
        instruction=req.input.text or "",
    )
    text = (await req.runtime.llm.text(prompt, system=req.agent.get_system_prompt())).strip()
    await res.send(text, kind="tweet")


conversation = Route(
    name="conversation",
    description="Talk with the user: answer questions, give advice, keep the conversation going.",
    handler=converse,
)

create_new_tweet = Route(
    name="create_new_tweet",
    description="Write a new post for the agent's own timeline.",
    handler=write_tweet,
    internal_only=True,
)


def standard_routes() -> list[Route]:
    return [conversation, create_new_tweet]
