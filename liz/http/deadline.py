"""``LIZ_REQUEST_TIMEOUT``: one deadline for the whole request, answered 504 when it passes.

The route that does the slow work (``POST /agent/input``) stops its turn at the
deadline itself (:func:`within_deadline`), so it can still answer, and record that
answer for a retried ``Idempotency-Key``. This middleware is the backstop for every
route: shortly after the deadline it cancels whatever still runs and answers 504 if
nothing was sent yet.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from liz.errors import RequestTimeout
from liz.http.error_responses import error_response

logger = logging.getLogger(__name__)

# The route's own deadline comes first; the backstop waits this much longer.
BACKSTOP_GRACE_SECONDS = 1.0


def timed_out(seconds: float) -> RequestTimeout:
    return RequestTimeout(
        f"the request took longer than LIZ_REQUEST_TIMEOUT ({seconds:g} s) and was stopped; "
        "try again later"
    )


class RequestDeadline:
    """Pure ASGI middleware: puts ``deadline`` (loop time) on ``request.state``."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.seconds <= 0:
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state["deadline"] = asyncio.get_running_loop().time() + self.seconds
        state["request_timeout"] = self.seconds
        started = False

        async def send_watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        backstop = asyncio.timeout(self.seconds + BACKSTOP_GRACE_SECONDS)
        try:
            async with backstop:
                await self.app(scope, receive, send_watched)
        except TimeoutError:
            if not backstop.expired():
                raise
            logger.warning("request %s passed its deadline", state.get("request_id"))
            if not started:
                response = error_response(timed_out(self.seconds), state.get("request_id"))
                await response(scope, receive, send)


@asynccontextmanager
async def within_deadline(request: Request) -> AsyncIterator[None]:
    """Run the block until the request's deadline; past it, raise :class:`RequestTimeout`."""
    deadline: float | None = getattr(request.state, "deadline", None)
    if deadline is None:
        yield
        return
    timeout = asyncio.timeout_at(deadline)
    try:
        async with timeout:
            yield
    except TimeoutError:
        if not timeout.expired():
            raise
        raise timed_out(request.state.request_timeout) from None
