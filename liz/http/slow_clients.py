"""What ``liz serve`` does against clients that hold connections: a header timeout and a cap.

uvicorn closes an idle keep-alive connection, but a connection that never finishes
its request headers (sent a byte at a time, or not at all) is held forever, one
file descriptor each. The protocol liz serves with closes it with a 408 after
``LIZ_HEADER_TIMEOUT`` seconds, and uvicorn's ``limit_concurrency`` answers a request
with a 503 and closes its connection when ``LIZ_MAX_CONNECTIONS`` connections are open
(or requests running). A reverse proxy in front (nginx, Caddy) does the same and more;
this is the floor without one.
"""

from __future__ import annotations

from typing import Any

from liz._compat import h11_protocol_with_header_deadline
from liz.config import Settings


def _answer(status: str, reason: str) -> bytes:
    body = f'{{"error": "{reason}"}}'.encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


TOO_SLOW = _answer("408 Request Timeout", "the request headers took too long; send them at once")


def server_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's options for ``settings``: the guarded protocol and the connection cap."""
    return {
        "http": h11_protocol_with_header_deadline(settings.liz_header_timeout, TOO_SLOW),
        # uvicorn counts the connection asking too: this many others may be open.
        "limit_concurrency": settings.liz_max_connections + 1,
    }
