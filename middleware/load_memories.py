"""Load the user's recent conversation with this agent, as much as the token budget holds."""

from __future__ import annotations

from collections.abc import Sequence

from liz.conversation import line_tokens
from liz.db.memories import read_recent
from liz.errors import UsageError
from liz.pipeline import AgentRequest, AgentResponse, Middleware
from liz.types import Memory, Next


def load_memories(limit: int = 100, tokens: int | None = None) -> Middleware:
    """A step that puts the user's most recent memories, newest first, on `req.memories`.

    At most `limit` of them, and only the newest whose lines fit in `tokens`
    estimated tokens (default: the `LIZ_CONTEXT_TOKENS` setting; 0: no budget).
    The newest memory is kept even when it alone is longer than the budget: the
    conversation's last line is what the user's next message answers.
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
        req.memories = newest_within_budget(memories, budget)
        await next()

    return load


def newest_within_budget(memories: Sequence[Memory], budget: int) -> list[Memory]:
    """The newest of `memories` (newest first) whose lines fit in `budget`; 0 keeps all."""
    if budget == 0:
        return list(memories)
    kept: list[Memory] = []
    used = 0
    for memory in memories:
        used += line_tokens(memory)
        if used > budget and kept:
            break
        kept.append(memory)
    return kept
