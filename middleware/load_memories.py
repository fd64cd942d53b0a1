"""Load the user's recent conversation with this agent."""

from __future__ import annotations

from liz.db.memories import recent_memories
from liz.errors import UsageError
from liz.pipeline import AgentRequest, AgentResponse
from liz.types import Middleware, Next


def load_memories(limit: int = 100) -> Middleware:
    """A step that puts the user's `limit` most recent memories, newest first, on `req.memories`."""
    if limit < 1:
        raise UsageError(f"load_memories(limit={limit}): limit must be at least 1")

    async def load(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        async with req.runtime.reads() as session:
            req.memories = await recent_memories(
                session, user_id=req.input.user_id, agent_id=req.input.agent_id, limit=limit
            )
        await next()

    return load
