"""``GET /agents`` and ``GET /health``: what is served, and whether it can work."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from sqlalchemy import text
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from liz.agent import BaseAgent
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
    try:
        async with framework.runtime.sessions() as session:
            await session.execute(text("SELECT 1"))
        database = "ok"
    except Exception as exc:  # the health check reports, it never fails itself
        logger.warning("health check: database unreachable: %s", exc)
        database = f"unreachable: {type(exc).__name__}"
    llm = "configured" if framework.runtime.llm_client is not None else "not configured"
    status = 200 if database == "ok" else 503
    return JSONResponse(
        {"status": "ok" if status == 200 else "degraded", "database": database, "llm": llm},
        status_code=status,
    )
