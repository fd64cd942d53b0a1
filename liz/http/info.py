"""``GET /agents`` and ``GET /health``: what is served, and whether it can work."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from liz.agent import BaseAgent
from liz.db.health import database_problem
from liz.pipeline import AgentFramework

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
    return JSONResponse(
        {"status": "ok" if status == 200 else "degraded", "database": database, "llm": llm},
        status_code=status,
    )
