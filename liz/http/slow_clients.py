"""What ``liz serve`` does against clients that hold connections: a header timeout and a cap.

uvicorn closes an idle keep-alive connection, but a connection that never finishes
its request headers (sent a byte at a time, or not at all) is held forever, one
file descriptor each. :class:`GuardedH11Protocol` closes it with a 408 after
``LIZ_HEADER_TIMEOUT`` seconds, and answers a connection past
``LIZ_MAX_CONNECTIONS`` open ones with a 503 and closes it. A reverse proxy in
front (nginx, Caddy) does the same and more; this is the floor without one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

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
TOO_MANY = _answer("503 Service Unavailable", "too many open connections; try again shortly")


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers and a cap on
    open connections (set on a subclass by :func:`guarded_protocol`)."""

    header_timeout: float = 10.0
    max_connections: int = 1000
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            logger.warning("refused a connection: %d are open already", self.max_connections)
            transport.write(TOO_MANY)
            transport.close()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
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
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.write(TOO_SLOW)
            self.transport.close()


def guarded_protocol(header_timeout: float, max_connections: int) -> type[GuardedH11Protocol]:
    return type(
        "GuardedH11Protocol",
        (GuardedH11Protocol,),
        {"header_timeout": header_timeout, "max_connections": max_connections},
    )


def server_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's options for ``settings``: the guarded protocol."""
    return {"http": guarded_protocol(settings.liz_header_timeout, settings.liz_max_connections)}
