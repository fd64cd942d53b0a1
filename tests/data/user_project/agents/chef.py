"""A user's own `agents` package, as OpenAI's Agents SDK names its import."""

from __future__ import annotations

from liz import BaseAgent, Character
from liz.routes import standard_routes


def create_chef() -> BaseAgent:
    agent = BaseAgent(
        Character(
            agent_id="chef",
            name="Remy",
            system="You are Remy, a chef who answers in one sentence.",
            bio=["Cooked in Lyon for twenty years."],
        )
    )
    for route in standard_routes():
        agent.add_route(route)
    return agent
