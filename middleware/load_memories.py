"""Load the user's recent conversation with this agent, as much as the token budget holds.

The window of messages shown moves in steps (liz.prompts.context_window), so the start of the
conversation in the prompt stays the same for many turns and the provider's prompt cache
serves it.
"""

from __future__ import annotations

from liz.db.memories import read_recent
from liz.errors import UsageError
from liz.pipeline import AgentRequest, AgentResponse, Middleware
from liz.prompts.context_window import conversation_window
from liz.types import Next


def load_memories(limit: int = 100, tokens: int | None = None) -> Middleware:
    """A step that puts the user's most recent memories, newest first, on `req.memories`.

    At most `limit` of them, and only the newest whose lines fit in `tokens`
    estimated tokens (default: the `LIZ_CONTEXT_TOKENS` setting; 0: no budget, the
    last `limit`). Once the conversation outgrows the budget, the window moves in steps
    of about half of it, every few turns (liz.prompts.context_window). The newest
    memory is kept even when it alone is longer than the budget: the conversation's
    last line is what the user's next message answers.
    """
    if limit < 1:
        raise UsageError(f"load_memories(limit={limit}): limit must be at least 1")
    if tokens is not None and tokens < 0:
        raise UsageError(f"load_memories(tokens={tokens}): tokens must be 0 (no budget) or more")

    async def load(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        memories = await read_recent(
            req.runtime.engine, user_id=req.input.user_id, agent_id=req.input.agent_id, limit=limit
        )
        if req.input_memory_id is not None:  # a retry: its input, stored by the first try
            memories = [memory for memory in memories if memory.id != req.input_memory_id]
        budget = req.runtime.settings.liz_context_tokens if tokens is None else tokens
        req.memories = conversation_window(memories, budget, limit)
        await next()

    return load
