"""Pick the route that handles the input, then run it."""

from __future__ import annotations

import logging

from liz.errors import InputError, LLMError
from liz.llm.errors import UNUSABLE_ANSWER
from liz.pipeline import AgentRequest, AgentResponse, Route
from liz.types import Next, RouteChoice

logger = logging.getLogger(__name__)


def eligible_routes(req: AgentRequest) -> list[Route]:
    """Internal-only routes are offered only to inputs from an internal source."""
    internal = req.input.source.is_internal
    return [route for route in req.agent.get_routes() if internal or not route.internal_only]


async def choose_route(req: AgentRequest, routes: list[Route]) -> Route:
    by_name = {route.name: route for route in routes}
    if req.input.source.is_internal and req.input.route:
        if req.input.route not in by_name:
            raise InputError(
                f"agent {req.agent.agent_id!r} has no route {req.input.route!r}; "
                f"its routes are: {', '.join(by_name)}"
            )
        return by_name[req.input.route]
    if len(routes) == 1:
        return routes[0]
    prompt = req.agent.templates.render("router.j2", routes=routes, context=req.context)
    choice = await req.runtime.llm.structured(prompt, RouteChoice, size="small")
    logger.info(
        "router chose %s (confidence %.2f): %s", choice.route, choice.confidence, choice.reasoning
    )
    if choice.route not in by_name:
        raise LLMError(
            f"the router LLM chose the unknown route {choice.route!r}; "
            f"the routes on offer were: {', '.join(by_name)}",
            # What the model said, and the agent's routes, are for the operator's log.
            public=UNUSABLE_ANSWER,
        )
    req.route_choice = choice
    return by_name[choice.route]


async def router(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    routes = eligible_routes(req)
    if not routes:
        raise InputError(f"agent {req.agent.agent_id!r} has no route that can take this input")
    route = await choose_route(req, routes)
    await route.handler(req, res)
    if res.reply is not None and res.reply.route is None:
        res.reply.route = route.name
    await next()
