"""Build the prompt context: previous conversation, facts, the agent, the new input."""

from __future__ import annotations

from liz.pipeline import AgentRequest, AgentResponse
from liz.types import Next


async def wrap_context(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    """Render `req.context` from the memories (oldest first), recalled facts and the agent."""
    req.context = req.agent.templates.render(
        "context.j2",
        memories=list(reversed(req.memories)),
        facts=req.facts,
        agent_context=req.agent.get_agent_context(),
        user_input=req.input.text or "",
        image_urls=req.input.image_urls,
    )
    await next()
