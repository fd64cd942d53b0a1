"""``GET /health`` and ``GET /agents``: whether this process can work, and what it serves."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from liz.agent import BaseAgent
from liz.connectors.status import bot_statuses
from liz.db.health import WriteProbe
from liz.http.bodies import AgentInfo, Agents, Health, json_response
from liz.learning_queue.health import learning_backlog, set_aside
from liz.pipeline import AgentFramework
from liz.tools.mcp_lifecycle import mcp_health

logger = logging.getLogger(__name__)


async def list_agents(request: Request) -> Response:
    agents: Mapping[str, BaseAgent] = request.app.state.agents
    served = [
        AgentInfo(agent_id=agent.agent_id, name=agent.name, routes=agent.get_routes())
        for agent in agents.values()
    ]
    return json_response(Agents(agents=served))


def write_probe(request: Request) -> WriteProbe:
    """The app's one probe, made on first use (the framework may be set after the app)."""
    probe: WriteProbe | None = getattr(request.app.state, "write_probe", None)
    runtime = request.app.state.framework.runtime
    if probe is None or probe.engine is not runtime.engine:
        probe = WriteProbe(runtime.sessions, runtime.engine, runtime.clock)
        request.app.state.write_probe = probe
    return probe


async def health(request: Request) -> Response:
    """200 "ok" only when a write would succeed now (the probe's answer of the last
    seconds); 503 "degraded" otherwise, saying what is wrong."""
    framework: AgentFramework = request.app.state.framework
    problem = await write_probe(request).problem()
    database = problem or "ok"
    llm = "configured" if framework.runtime.llm_client is not None else "not configured"
    status = 200 if database == "ok" else 503
    body: dict[str, Any] = {"status": "ok" if status == 200 else "degraded"}
    body.update(database=database, llm=llm)
    body["mcp"] = mcp_health(request.app.state.agents.values()) or None  # liz.tools
    if framework.runtime.facts is not None and database.startswith("unreachable"):
        body["learning"] = {"status": "unknown: the database is unreachable"}
    elif framework.runtime.facts is not None:  # the facts still to learn
        body["learning"] = await learning_backlog(framework.runtime)
        if database == "ok":  # messages learning gave up on (`liz facts retry ID`)
            body["set_aside"] = await set_aside(framework.runtime.reads) or None
    if database == "ok":  # liz telegram run: last poll, backlog, answered
        body["connectors"] = await _chat_bots(framework) or None
    return json_response(Health.model_validate(body), status)


async def _chat_bots(framework: AgentFramework) -> list[dict[str, Any]]:
    try:
        async with framework.runtime.reads() as session:
            bots = await bot_statuses(session)
    except Exception as exc:  # the health check reports, it never fails itself
        logger.warning("health check: cannot read the chat bots: %s", exc)
        return []
    now = framework.runtime.clock.now()
    return [bot.as_fields(now) for bot in bots]
