"""Build the prompt context: the agent, previous conversation, facts, the new input.

In that order, from what never changes to what changes every turn, so the provider's
prompt cache serves the start of every prompt (see liz/prompts/context.j2).
"""

from __future__ import annotations

from liz.pipeline import AgentRequest, AgentResponse
from liz.types import Next


async def wrap_context(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    """Render `req.context` from the agent, the memories (oldest first) and recalled facts."""
    req.context = req.agent.templates.render(
        "context.j2",
        agent_context=req.agent.get_agent_context(req.runtime.clock.now().date()),
        memories=list(reversed(req.memories)),
        facts=req.facts,
        user_input=req.input.text or "",
        image_urls=req.input.image_urls,
    )
    await next()
