"""Refuse inputs that break Liz's rules before anything is loaded or stored."""

from __future__ import annotations

from liz.errors import InputError
from liz.pipeline import AgentRequest, AgentResponse
from liz.runtime.input_rules import input_problems
from liz.types import Next


async def validate_input(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    """userId and agentId are required; `text` needs text; `text_and_image` needs both.

    Ids and text must be valid Unicode with something visible in them, and image URLs
    public http(s) or inline images (see :mod:`liz.runtime.input_rules`).
    """
    problems = input_problems(req.input)
    if problems:
        raise InputError("invalid input: " + "; ".join(problems))
    await next()
