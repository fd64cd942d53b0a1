"""Build the prompt context: previous conversation, facts, the agent, the new input."""

from __future__ import annotations

from liz.pipeline import AgentRequest, AgentResponse
from liz.tokens import newest_within_budget
from liz.types import Memory, Next


def conversation_line(memory: Memory) -> str:
    """How context.j2 shows one message: ``User ann (2026-11-29 12:00:00 UTC): Hello``."""
    speaker = "You" if memory.generator == "llm" else f"User {memory.user_id}"
    # isoformat, not strftime: a tenth of the cost, and 100 lines are written per turn.
    at = memory.created_at.isoformat(sep=" ", timespec="seconds")[:19]
    return f"{speaker} ({at} UTC): {memory.text}"


async def wrap_context(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    """Render `req.context` from the memories (oldest first), recalled facts and the agent.

    The previous conversation keeps the newest memories that fit in
    ``LIZ_CONTEXT_TOKENS`` (estimated tokens, see ``liz.tokens``); older ones are
    left out, and the recalled facts carry what they said about the user.
    """
    memories = newest_within_budget(req.memories, req.runtime.settings.liz_context_tokens)
    memories.reverse()  # oldest first
    req.context = req.agent.templates.render(
        "context.j2",
        memories=memories,
        conversation=[conversation_line(memory) for memory in memories],
        facts=req.facts,
        agent_context=req.agent.get_agent_context(),
        user_input=req.input.text or "",
        image_urls=req.input.image_urls,
    )
    await next()
