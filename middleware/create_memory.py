"""Store the user's input before any LLM call, so an outage never loses it."""

from __future__ import annotations

from liz.db.memories import insert_memory
from liz.pipeline import AgentRequest, AgentResponse
from liz.types import Memory, Next


async def create_memory(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    content: dict[str, object] = {"text": req.input.text or ""}
    if req.input.image_urls:
        content["imageUrls"] = req.input.image_urls
    memory = Memory(
        user_id=req.input.user_id,
        agent_id=req.input.agent_id,
        room_id=req.input.room,
        content=content,
        type=req.input.type.value,
        generator="external",
        created_at=req.runtime.clock.now(),
    )
    if not req.dry_run:
        async with req.runtime.sessions() as session, session.begin():
            await insert_memory(session, memory)
        req.state["input_memory_id"] = memory.id
    await next()
