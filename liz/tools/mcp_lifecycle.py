"""The agents' MCP servers, started with the app and stopped with it; their health."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from liz.agent import BaseAgent


@asynccontextmanager
async def mcp_servers_running(agents: Iterable[BaseAgent]) -> AsyncIterator[None]:
    """Start every agent's MCP servers (together); stop them on exit.

    One that cannot start stops the others and raises its one-line
    :class:`liz.tools.mcp_servers.MCPServerError`.
    """
    servers = [server for agent in agents for server in agent.mcp_servers]
    outcomes = await asyncio.gather(*(s.start() for s in servers), return_exceptions=True)
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    try:
        if failed:
            raise failed[0]
        yield
    finally:
        await asyncio.gather(*(s.stop() for s in servers))


def mcp_health(agents: Iterable[BaseAgent]) -> dict[str, dict[str, Any]]:
    """Each MCP server's status (running, down...), tools, restarts and last error, by
    ``agentId/server``; what ``GET /health`` shows under ``mcp``."""
    return {
        f"{agent.agent_id}/{server.name}": server.health()
        for agent in agents
        for server in agent.mcp_servers
    }
