"""The query embeddings of concurrent searches, asked for in shared requests.

Texts asked for in the same pass of the event loop go in one request (at most
``MOST_TEXTS``); while one request is out, new texts wait and go together in the
next. A lone search is sent at once. A request refused for what it carries (400, 413, 422)
is sent again one text at a time, so one user's text never fails another's search.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from liz.facts.vectors import Group, Vector, embed_groups

if TYPE_CHECKING:
    from liz.llm import LLMClient

MOST_TEXTS = 32


class QueryVectors:
    """Unit-length query embeddings by ``llm``'s embedding model, batched under load."""

    def __init__(self, llm: LLMClient) -> None:
        self.llm = llm
        self._waiting: list[Group] = []
        self._out = False
        self._sending: set[asyncio.Task[None]] = set()  # held, so none is collected mid-way

    async def embed(self, text: str) -> Vector:
        """``text``'s embedding, in the next request that goes out."""
        future: asyncio.Future[list[Vector]] = asyncio.get_running_loop().create_future()
        self._waiting.append(([text], future))
        self._send_if_free()
        (vector,) = await future
        return vector

    def _send_if_free(self) -> None:
        if self._out or not self._waiting:
            return
        self._out = True
        task = asyncio.ensure_future(self._send())
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self) -> None:
        try:
            # Texts asked for until this task runs (the rest of this pass) come along.
            await asyncio.sleep(0)
            batch = [(texts, future) for texts, future in self._waiting if not future.done()]
            batch, self._waiting = batch[:MOST_TEXTS], batch[MOST_TEXTS:]
            if batch:
                await embed_groups(self.llm, batch)
        finally:
            self._out = False
            self._send_if_free()
