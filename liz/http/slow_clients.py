"""What ``liz serve`` does against clients that hold connections: a header timeout and a cap.

uvicorn closes an idle keep-alive connection, but a connection that never finishes
its request headers (sent a byte at a time, or not at all) is held forever, one
file descriptor each. :class:`GuardedH11Protocol` closes it with a 408 after
``LIZ_HEADER_TIMEOUT`` seconds, and uvicorn's ``limit_concurrency`` answers a request
with a 503 and closes its connection when ``LIZ_MAX_CONNECTIONS`` connections are open
(or requests running). A reverse proxy in front (nginx, Caddy) does the same and more;
this is the floor without one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from liz._compat import H11Protocol, awaiting_request_headers
from liz.config import Settings

logger = logging.getLogger(__name__)


def _answer(status: str, reason: str) -> bytes:
    body = f'{{"error": "{reason}"}}'.encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


TOO_SLOW = _answer("408 Request Timeout", "the request headers took too long; send them at once")


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers (set on a
    subclass by :func:`guarded_protocol`)."""

    header_timeout: float = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if awaiting_request_headers(self):
            self._arm()  # part of a request's headers, or none yet: the clock runs
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _too_slow(self) -> None:
        self._header_timer = None
        if awaiting_request_headers(self):
            self.transport.write(TOO_SLOW)
            self.transport.close()


def guarded_protocol(header_timeout: float) -> type[GuardedH11Protocol]:
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"header_timeout": header_timeout})


def server_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's options for ``settings``: the guarded protocol and the connection cap."""
    return {
        "http": guarded_protocol(settings.liz_header_timeout),
        # uvicorn counts the connection asking too: this many others may be open.
        "limit_concurrency": settings.liz_max_connections + 1,
    }
