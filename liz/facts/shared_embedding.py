"""One embeddings request shared by askers known in advance (the bursts learned at one
beat, liz.learning_queue.beats), each taking a seat before the moment comes.

It goes out once every seat has asked or left, so nobody waits on a seat that will not
ask; a seat that asked or left, or came late, asks alone. The request is counted
(liz.observe.usage) with the first asker's work, once.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from liz.facts.vectors import Vector, embed, embed_groups

if TYPE_CHECKING:
    from liz.llm import LLMClient


@dataclass
class _Asked:
    llm: LLMClient
    texts: Sequence[str]
    future: asyncio.Future[list[Vector]]
    context: contextvars.Context = field(default_factory=contextvars.copy_context)


class SharedEmbedding:
    """The seats of one shared request, and the request once they are all in."""

    def __init__(self) -> None:
        self._open: set[Seat] = set()  # seated, neither asked nor left
        self._asked: list[_Asked] = []
        self._sending: asyncio.Task[None] | None = None

    @property
    def closed(self) -> bool:
        """No seat is left to take: the request went out, or every seat left unasked."""
        return self._sending is not None or (not self._open and not self._asked)

    def seat(self) -> Seat:
        seat = Seat(self)
        if self._sending is None:
            self._open.add(seat)
        else:
            seat.alone = True
        return seat

    def _ask(self, seat: Seat, llm: LLMClient, texts: Sequence[str]) -> _Asked:
        asked = _Asked(llm, texts, asyncio.get_running_loop().create_future())
        self._open.discard(seat)
        self._asked.append(asked)
        self._send_if_all_in()
        return asked

    def _leave(self, seat: Seat) -> None:
        self._open.discard(seat)
        self._send_if_all_in()

    def _send_if_all_in(self) -> None:
        if self._open or not self._asked or self._sending is not None:
            return
        # In the first asker's context: its work counts the request, once. (The askers
        # learn with one store, so with one LLM client.)
        first = self._asked[0]
        loop = asyncio.get_running_loop()
        self._sending = loop.create_task(self._send(first.llm), context=first.context)

    async def _send(self, llm: LLMClient) -> None:
        waiting = [(asked.texts, asked.future) for asked in self._asked]
        await embed_groups(llm, [group for group in waiting if not group[1].done()])

    def _gave_up(self) -> None:
        """An asker stopped waiting (cancelled): stop the request if nobody waits."""
        if self._sending is not None and all(asked.future.done() for asked in self._asked):
            self._sending.cancel()


class Seat:
    """A place in a :class:`SharedEmbedding`: :meth:`embed` once, or :meth:`leave`."""

    def __init__(self, shared: SharedEmbedding) -> None:
        self._shared = shared
        self.alone = False  # asked or left already: it asks on its own

    async def embed(self, llm: LLMClient, texts: Sequence[str]) -> list[Vector]:
        """The texts' embeddings, in the shared request the first time."""
        if self.alone:
            return await embed(llm, texts)
        self.alone = True
        asked = self._shared._ask(self, llm, texts)
        try:
            return await asked.future
        except asyncio.CancelledError:
            self._shared._gave_up()
            raise

    def leave(self) -> None:
        """Ask for nothing: the others need not wait (again: nothing)."""
        if not self.alone:
            self.alone = True
            self._shared._leave(self)
