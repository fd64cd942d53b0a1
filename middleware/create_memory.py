"""Keep the turn in the conversation log: the input before the reply, then the reply.

The input is stored before any LLM call, so an outage never loses it; the reply
after the rest of the chain has produced it. Route handlers only produce text.
"""

from __future__ import annotations

from typing import Any

from liz.db.memories import insert_memory
from liz.pipeline import AgentRequest, AgentResponse
from liz.types import Generator, Memory, Next


async def create_memory(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    content: dict[str, Any] = {"text": req.input.text or ""}
    if req.input.image_urls:
        content["imageUrls"] = req.input.image_urls
    said = _memory(req, content, req.input.type.value, "external")
    if not req.dry_run:
        await _store(req, said)
        req.input_memory_id = said.id
    await next()
    if res.reply is not None and not req.dry_run:
        await _store(req, _memory(req, {"text": res.reply.text}, res.kind, "llm"))


def _memory(req: AgentRequest, content: dict[str, Any], type: str, by: Generator) -> Memory:
    return Memory(
        user_id=req.input.user_id,
        agent_id=req.input.agent_id,
        room_id=req.input.room,
        content=content,
        type=type,
        generator=by,
        created_at=req.runtime.clock.now(),
    )


async def _store(req: AgentRequest, memory: Memory) -> None:
    async with req.runtime.sessions() as session, session.begin():
        await insert_memory(session, memory)
