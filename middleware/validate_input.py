"""Refuse inputs that break Liz's rules before anything is loaded or stored."""

from __future__ import annotations

from liz.errors import InputError
from liz.pipeline import AgentRequest, AgentResponse
from liz.types import InputType, Next


async def validate_input(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    """userId, agentId and type are required; `text` needs text; `text_and_image` needs both."""
    problems = [
        f"{field} is required"
        for field, value in (("userId", req.input.user_id), ("agentId", req.input.agent_id))
        if not value.strip()
    ]
    has_text = bool(req.input.text and req.input.text.strip())
    if req.input.type is InputType.TEXT and not has_text:
        problems.append("text is required for inputs of type 'text'")
    if req.input.type is InputType.TEXT_AND_IMAGE:
        if not has_text:
            problems.append("text is required for inputs of type 'text_and_image'")
        if not req.input.image_urls:
            problems.append("imageUrls must hold at least one URL for type 'text_and_image'")
    if problems:
        raise InputError("invalid input: " + "; ".join(problems))
    await next()
