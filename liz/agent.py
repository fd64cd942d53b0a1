"""An agent: a character plus the routes it can take."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any, TypeVar, overload

from liz.character import Character
from liz.errors import UsageError
from liz.pipeline import Middleware, Route
from liz.prompts.templates import PromptTemplates, default_templates
from liz.tools.declare import python_tool
from liz.types import Tool

if TYPE_CHECKING:
    from liz.tools.mcp_servers import MCPServer

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

SAMPLE_SIZE = 3


class BaseAgent:
    """A character and its routes. Subclass it, or build one and call ``add_route``.

    >>> from liz import Character, Route
    >>> async def chat(req, res) -> None:
    ...     await res.send("Hello!")
    >>> agent = BaseAgent(Character(agent_id="ada", name="Ada", system="You help."))
    >>> agent.add_route(Route("conversation", "Chat with the user", chat))
    >>> agent.get_routes()[0].name
    'conversation'
    """

    def __init__(
        self,
        character: Character,
        *,
        templates: PromptTemplates | None = None,
    ) -> None:
        self.character = character
        self.templates = templates or default_templates
        self._routes: dict[str, Route] = {}
        # Steps only this agent's inputs run through, after the app's own.
        self.middleware: list[Middleware] = []
        self._tools: dict[str, Tool] = {}
        # MCP servers whose tools join this agent's (started and stopped with the app).
        self.mcp_servers: list[MCPServer] = []
        # The day's context, made once: the same text for every turn of that day.
        self._context: tuple[Character, PromptTemplates, str, str] | None = None
        if character.mcp_servers:  # the mcp SDK takes a second to import: only when used
            from liz.tools.mcp_servers import server_from_config

            for name, config in character.mcp_servers.items():
                self.mcp_servers.append(server_from_config(name, config))

    @property
    def agent_id(self) -> str:
        return self.character.agent_id

    @property
    def name(self) -> str:
        return self.character.name

    def use(self, *middleware: Middleware) -> BaseAgent:
        """Add steps that run for this agent's inputs only (after the app-wide ones)."""
        for step in middleware:
            if not callable(step):
                raise TypeError(f"middleware must be an async callable, got {step!r}")
        self.middleware.extend(middleware)
        return self

    def add_route(self, route: Route) -> None:
        if route.name in self._routes:
            raise UsageError(
                f"agent {self.agent_id!r} already has a route named {route.name!r}; "
                "route names must be unique"
            )
        self._routes[route.name] = route

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self, fn: None = None, /, *, name: str | None = None, requires_approval: bool = False
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        requires_approval: bool = False,
    ) -> Any:
        """Declare a function the model may call, as ``@agent.tool`` or ``@agent.tool(...)``.

        >>> agent = BaseAgent(Character(agent_id="shop", name="Shop", system="You sell."))
        >>> @agent.tool(requires_approval=True)
        ... def refund(order_id: str, amount: float) -> str:
        ...     \"\"\"Refund an order.
        ...
        ...     Args:
        ...         order_id: The order to refund.
        ...         amount: How much, in euros.
        ...     \"\"\"
        ...     return f"refunded {amount} on {order_id}"
        >>> agent.tools["refund"].requires_approval
        True
        """

        def declare(function: Callable[..., Any]) -> Callable[..., Any]:
            self.add_tool(function, name=name, requires_approval=requires_approval)
            return function

        return declare if fn is None else declare(fn)

    def add_tool(
        self,
        fn: Callable[..., Any] | Tool,
        *,
        name: str | None = None,
        requires_approval: bool = False,
    ) -> Tool:
        """Add a tool: a plain function (sync or async), described by its hints and docstring."""
        tool = (
            fn
            if isinstance(fn, Tool)
            else python_tool(fn, name=name, requires_approval=requires_approval)
        )
        if tool.name.startswith("mcp__"):
            raise UsageError(f"tool {tool.name!r}: names starting with 'mcp__' are for MCP tools")
        if tool.name in self._tools:
            raise UsageError(
                f"agent {self.agent_id!r} already has a tool named {tool.name!r}; "
                "tool names must be unique (pass name=... to rename one)"
            )
        self._tools[tool.name] = tool
        return tool

    def add_mcp_server(self, server: MCPServer) -> None:
        """Use an MCP server's tools (``liz.tools.mcp_servers.stdio_server``/``http_server``)."""
        if any(known.name == server.name for known in self.mcp_servers):
            raise UsageError(f"agent {self.agent_id!r} already has an MCP server {server.name!r}")
        self.mcp_servers.append(server)

    @property
    def tools(self) -> dict[str, Tool]:
        """Every tool the model may call now: the agent's own, then its MCP servers'."""
        tools = dict(self._tools)
        for server in self.mcp_servers:
            tools.update((tool.name, tool) for tool in server.tools)
        return tools

    def get_routes(self) -> list[Route]:
        return list(self._routes.values())

    def get_system_prompt(self) -> str:
        return self.character.system

    def get_agent_context(self, today: date | None = None) -> str:
        """The character as tagged blocks, with up to three of each list: the same all day.

        The selection is seeded by the agent's id and the UTC day (``today``, by default
        the current one), so every turn of every user on one day, in every process, gets
        the same text: the stable start of each prompt that providers cache. A selection
        drawn anew each turn would end the cached part at the first sampled line. The text
        is made once a day for the agent's character; assign a new ``agent.character``
        (rather than changing its fields) for a change to show the same day.
        """
        c = self.character
        day = (today or datetime.now(UTC).date()).isoformat()
        made = self._context
        if made is not None and made[0] is c and made[1] is self.templates and made[2] == day:
            return made[3]
        text = self.templates.render(
            "agent_context.j2",
            name=c.name,
            system=c.system,
            bio=self._sample(c.bio, "bio", day),
            lore=self._sample(c.lore, "lore", day),
            message_examples=self._sample(c.message_examples, "message_examples", day),
            post_examples=self._sample(c.post_examples, "post_examples", day),
            topics=self._sample(c.topics, "topics", day),
            style=self._sample(c.style.all + c.style.chat, "style", day),
            adjectives=self._sample(c.adjectives, "adjectives", day),
        )
        self._context = (c, self.templates, day, text)
        return text

    def _sample(self, items: Sequence[T], field: str, day: str) -> list[T]:
        """Three of ``items``, in the character's order, the same for the agent all ``day``."""
        if len(items) <= SAMPLE_SIZE:
            return list(items)
        # A string seed is hashed with SHA-512: the same draw in every process.
        draw = random.Random(f"{self.agent_id}\n{field}\n{day}")
        return [items[index] for index in sorted(draw.sample(range(len(items)), SAMPLE_SIZE))]
