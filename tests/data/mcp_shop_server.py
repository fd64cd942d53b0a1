"""A small MCP server for the tools tests: over stdio, or over HTTP with `http PORT`."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("shop")


@server.tool()
def stock(item: str) -> str:
    """How many of an item are in stock."""
    return f"{item}: 7 in stock"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def secret() -> str:
    """The token the server was started with."""
    return os.environ.get("SHOP_TOKEN", "")


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
