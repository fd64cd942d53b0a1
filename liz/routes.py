"""The standard routes: talk with the user, and write a new post."""

from __future__ import annotations

from liz.db.memories import insert_memory
from liz.pipeline import AgentRequest, AgentResponse
from liz.types import Memory, Route


async def store_reply(req: AgentRequest, text: str, *, type: str = "text") -> None:
    """Keep what the agent said, in the same room, so the next turn sees it."""
    if req.dry_run:
        return
    memory = Memory(
        user_id=req.input.user_id,
        agent_id=req.input.agent_id,
        room_id=req.input.room,
        content={"text": text},
        type=type,
        generator="llm",
        created_at=req.runtime.clock.now(),
    )
    async with req.runtime.sessions() as session, session.begin():
        await insert_memory(session, memory)


async def converse(req: AgentRequest, res: AgentResponse) -> None:
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
    await store_reply(req, text)
    await res.send(text)


async def write_tweet(req: AgentRequest, res: AgentResponse) -> None:
    character = req.agent.character
    prompt = req.agent.templates.render(
        "tweet.j2",
        name=character.name,
        agent_context=req.agent.get_agent_context(),
        post_style=character.style.all + character.style.post,
        recent_posts=[m.text for m in req.memories if m.generator == "llm"][:5],
        instruction=req.input.text or "",
    )
    text = (await req.runtime.llm.text(prompt, system=req.agent.get_system_prompt())).strip()
    await store_reply(req, text, type="tweet")
    await res.send(text)


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
