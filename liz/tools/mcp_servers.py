"""MCP servers whose tools join an agent's, through the official ``mcp`` SDK.

A server is a command (stdio) or a URL (Streamable HTTP). :meth:`MCPServer.start`
connects and lists its tools; a supervising task keeps the session, pings it, and
when the server dies marks it down (its tools then answer with an error) and connects
again with backoff. Tool names are ``mcp__<server>__<tool>``, so none can collide
with an agent's own (those may not start with ``mcp__``) or another server's.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import re
import shutil
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2
import mcp_types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from liz.errors import LizError
from liz.tools.context import ToolContext
from liz.tools.mcp_bad_lines import BadLines, hide_sdk_parse_errors
from liz.tools.mcp_config import MCPServerConfig, interpolate, variables
from liz.types import Tool

logger = logging.getLogger(__name__)

Status = Literal["stopped", "starting", "running", "down"]
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# The MCP SDK's own defaults: 30 s for a request, 5 minutes of quiet on a held event stream.
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


class MCPServerError(LizError):
    """An MCP server could not start, or is not running when its tool is called."""

    status = 503


@dataclass(frozen=True)
class Connection:
    """How to reach a server: ``command`` and ``args`` (stdio) or ``url`` (Streamable HTTP)."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return self.url or " ".join([self.command or "", *self.args]).strip()

    def problems(self, server: str) -> list[str]:
        """What would stop this server from starting, found without starting it (``liz
        agents check``): each ``${NAME}`` that is not set, a command that is not on PATH."""
        where = f"MCP server {server!r}"
        texts = [self.command or "", *self.args, *self.env.values(), self.url or ""]
        texts += self.headers.values()
        unset = sorted({name for text in texts for name in variables(text)} - set(os.environ))
        found = [f"{where} uses ${{{name}}}, but the variable {name} is not set" for name in unset]
        if self.command is not None and not set(variables(self.command)) & set(unset):
            command = interpolate(self.command, where)
            if shutil.which(command) is None:
                found.append(
                    f"{where}: the command {command!r} is not on PATH; install it or give its "
                    "full path"
                )
        return found

    def resolved(self, server: str) -> Connection:
        """This connection with every ``${NAME}`` replaced from the environment."""
        where = f"MCP server {server!r}"

        def each(values: dict[str, str]) -> dict[str, str]:
            return {key: interpolate(value, where) for key, value in values.items()}

        return Connection(
            command=None if self.command is None else interpolate(self.command, where),
            args=tuple(interpolate(arg, where) for arg in self.args),
            env=each(self.env),
            url=None if self.url is None else interpolate(self.url, where),
            headers=each(self.headers),
        )


@dataclass(eq=False)
class MCPServer:
    """One MCP server an agent uses. Build it with :func:`stdio_server` or :func:`http_server`.

    ``ping_every``: seconds between the liveness checks; ``max_backoff``: the longest
    wait between two attempts to connect again.
    """

    name: str
    connection: Connection
    ping_every: float = 2.0
    call_timeout: float = 60.0
    max_backoff: float = 30.0
    status: Status = "stopped"
    restarts: int = 0
    last_error: str | None = None
    _tools: list[Tool] = field(default_factory=list)
    _session: ClientSession | None = None
    _task: asyncio.Task[None] | None = None
    _stopping: asyncio.Event | None = None
    _check: asyncio.Event | None = None
    _bad_lines: BadLines | None = None  # of the session under way (liz.tools.mcp_bad_lines)

    @property
    def tools(self) -> list[Tool]:
        """The server's tools as last listed; while it is down they answer with an error."""
        return list(self._tools)

    async def start(self) -> None:
        """Connect and list the tools; an :class:`MCPServerError` in one line if it cannot."""
        self._stopping, self._check = asyncio.Event(), asyncio.Event()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.status = "starting"
        self._task = asyncio.create_task(self._supervise(ready), name=f"mcp-{self.name}")
        try:
            await ready
        except Exception as exc:
            await self.stop()
            raise MCPServerError(
                f"MCP server {self.name!r} ({self.connection.describe()}) could not start: "
                f"{_one_line(exc)}"
            ) from None

    async def stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 10)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()
            self._task = None
        self.status = "stopped"

    def health(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "tools": len(self._tools),
            "restarts": self.restarts,
            "error": self.last_error,
        }

    async def _supervise(self, ready: asyncio.Future[None]) -> None:
        backoff = 0.25
        assert self._stopping is not None and self._check is not None  # set by start()
        while not self._stopping.is_set():
            try:
                async with AsyncExitStack() as stack:
                    session = await self._connect(stack)
                    listed = await session.list_tools()
                    self._tools = [self._tool(t) for t in listed.tools]
                    self._session, self.status, self.last_error = session, "running", None
                    if not ready.done():
                        ready.set_result(None)
                    backoff = 0.25
                    await self._watch(session)
            except Exception as exc:
                if not ready.done():
                    ready.set_exception(exc)
                    return
                self.last_error = _one_line(exc)
            finally:
                self._session = None
            if self._stopping.is_set():
                return
            self.status = "down"
            logger.warning("MCP server %r is down (%s); restarting", self.name, self.last_error)
            try:
                await asyncio.wait_for(self._stopping.wait(), backoff)
                return
            except TimeoutError:
                pass
            backoff = min(backoff * 2, self.max_backoff)
            self.restarts += 1

    async def _watch(self, session: ClientSession) -> None:
        """Return when asked to stop; raise when the server stops answering pings."""
        assert self._stopping is not None and self._check is not None
        while not self._stopping.is_set():
            self._check.clear()
            waits = [
                asyncio.ensure_future(self._stopping.wait()),
                asyncio.ensure_future(self._check.wait()),
            ]
            await asyncio.wait(waits, timeout=self.ping_every, return_when=asyncio.FIRST_COMPLETED)
            for waiting in waits:
                waiting.cancel()
            if self._stopping.is_set():
                return
            if self._bad_lines is not None and self._bad_lines.too_many:
                raise MCPServerError(
                    f"it wrote {self._bad_lines.total} lines that are not JSON-RPC"
                )
            await asyncio.wait_for(session.send_ping(), self.ping_every)

    async def _connect(self, stack: AsyncExitStack) -> ClientSession:
        c = self.connection.resolved(self.name)
        if c.url is not None:
            client = httpx2.AsyncClient(headers=c.headers, timeout=HTTP_TIMEOUT)
            http = await stack.enter_async_context(client)
            streams = await stack.enter_async_context(
                streamable_http_client(c.url, http_client=http)
            )
        elif c.command is not None:
            hide_sdk_parse_errors()  # each bad line is counted instead (_message)
            params = StdioServerParameters(command=c.command, args=list(c.args), env=c.env or None)
            streams = await stack.enter_async_context(stdio_client(params))
        else:
            raise MCPServerError(f"MCP server {self.name!r} has neither a command nor a url")
        read, write = streams[0], streams[1]
        self._bad_lines = BadLines(self.name)
        session = await stack.enter_async_context(
            ClientSession(read, write, message_handler=self._message)
        )
        await asyncio.wait_for(session.initialize(), 30)
        return session

    async def _message(self, message: object) -> None:
        """What the session surfaces: a line it could not parse is counted, and too many
        of them wake the watcher, which restarts the server."""
        if isinstance(message, Exception) and self._bad_lines is not None:
            self._bad_lines.seen(message)
            if self._bad_lines.too_many and self._check is not None:
                self._check.set()

    def _tool(self, listed: mcp_types.Tool) -> Tool:
        remote = listed.name

        async def run(ctx: ToolContext | None, arguments: dict[str, Any]) -> Any:
            session = self._session
            if session is None or self.status != "running":
                raise MCPServerError(
                    f"the MCP server {self.name!r} is {self.status}; it is being restarted"
                )
            try:
                result = await session.call_tool(
                    remote, arguments, read_timeout_seconds=self.call_timeout
                )
            except Exception:
                if self._check is not None:
                    self._check.set()  # the server may have died: look now
                raise
            return _result(self.name, remote, result)

        schema = dict(listed.input_schema or {"type": "object", "properties": {}})
        return Tool(
            name=tool_name(self.name, remote),
            description=listed.description or listed.title or remote,
            parameters=schema,
            run=run,
        )


class MCPToolError(Exception):
    """The MCP tool answered with an error."""


def _result(server: str, name: str, result: mcp_types.CallToolResult) -> Any:
    texts = [block.text for block in result.content if isinstance(block, mcp_types.TextContent)]
    if result.is_error:
        raise MCPToolError(" ".join(texts) or f"{server}/{name} reported an error")
    if result.structured_content is not None:
        return result.structured_content
    return "\n".join(texts)


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, made of allowed characters and at most 64 of them."""
    name = f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= 64:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:55]}_{digest}"


def stdio_server(
    name: str, command: str, args: list[str] | None = None, env: dict[str, str] | None = None
) -> MCPServer:
    """An MCP server started as ``command args...``, spoken to over its stdin and stdout."""
    return MCPServer(name, Connection(command=command, args=tuple(args or ()), env=dict(env or {})))


def http_server(name: str, url: str, headers: dict[str, str] | None = None) -> MCPServer:
    """An MCP server at ``url`` (Streamable HTTP), with ``headers`` on every request."""
    return MCPServer(name, Connection(url=url, headers=dict(headers or {})))


def server_from_config(name: str, config: MCPServerConfig) -> MCPServer:
    """The server a character file's ``mcpServers`` entry describes."""
    if config.url is not None:
        return http_server(name, config.url, config.headers)
    return stdio_server(name, config.command or "", config.args, config.env)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _one_line(exc.exceptions[0])
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if str(exc) else text
