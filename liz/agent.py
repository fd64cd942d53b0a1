"""An agent: a character plus the routes it can take."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from liz.character import Character
from liz.errors import UsageError
from liz.pipeline import Middleware, Route
from liz.templates import PromptTemplates, default_templates

T = TypeVar("T")

SAMPLE_SIZE = 3


class BaseAgent:
    """A character and its routes. Subclass it, or build one and call ``add_route``.

    >>> agent = BaseAgent(Character(agent_id="ada", name="Ada", system="You help."))
    >>> agent.add_route(Route("conversation", "Chat with the user", handler))
    """

    def __init__(
        self,
        character: Character,
        *,
        templates: PromptTemplates | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.character = character
        self.templates = templates or default_templates
        self.rng = rng or random.Random()
        self._routes: dict[str, Route] = {}
        # Steps only this agent's inputs run through, after the app's own.
        self.middleware: list[Middleware] = []

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

    def get_routes(self) -> list[Route]:
        return list(self._routes.values())

    def get_system_prompt(self) -> str:
        return self.character.system

    def get_agent_context(self) -> str:
        """The character as tagged blocks, with up to three random samples of each list."""
        c = self.character
        return self.templates.render(
            "agent_context.j2",
            name=c.name,
            system=c.system,
            bio=self._sample(c.bio),
            lore=self._sample(c.lore),
            message_examples=self._sample(c.message_examples),
            post_examples=self._sample(c.post_examples),
            topics=self._sample(c.topics),
            style=self._sample(c.style.all + c.style.chat),
            adjectives=self._sample(c.adjectives),
        )

    def _sample(self, items: Sequence[T]) -> list[T]:
        if len(items) <= SAMPLE_SIZE:
            return list(items)
        return self.rng.sample(list(items), SAMPLE_SIZE)
