"""``GET /agents`` and ``GET /health``: what is served, and whether it can work."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from liz.agent import BaseAgent
from liz.db.health import database_problem
from liz.learning_queue.health import learning_backlog
from liz.pipeline import AgentFramework
from liz.tools.mcp_lifecycle import mcp_health

logger = logging.getLogger(__name__)


async def list_agents(request: Request) -> Response:
    agents: Mapping[str, BaseAgent] = request.app.state.agents
    return JSONResponse(
        {
            "agents": [
                {
                    "agentId": agent.agent_id,
                    "name": agent.name,
                    "routes": [
                        {
                            "name": r.name,
                            "description": r.description,
                            "internalOnly": r.internal_only,
                        }
                        for r in agent.get_routes()
                    ],
                }
                for agent in agents.values()
            ]
        }
    )


async def health(request: Request) -> Response:
    framework: AgentFramework = request.app.state.framework
    runtime = framework.runtime
    problem = await database_problem(runtime.sessions, runtime.engine, runtime.clock)
    database = problem or "ok"
    llm = "configured" if framework.runtime.llm_client is not None else "not configured"
    status = 200 if database == "ok" else 503
    body: dict[str, Any] = {"status": "ok" if status == 200 else "degraded"}
    body.update(database=database, llm=llm)
    if servers := mcp_health(request.app.state.agents.values()):  # liz.tools
        body["mcp"] = servers
    if framework.runtime.facts is not None:  # the facts still to learn
        body["learning"] = await learning_backlog(framework.runtime)
    return JSONResponse(body, status_code=status)
