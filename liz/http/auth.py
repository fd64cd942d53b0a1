"""``LIZ_API_KEY``: every path but ``/health`` needs ``Authorization: Bearer <key>``."""

from __future__ import annotations

import secrets

from starlette.types import ASGIApp, Receive, Scope, Send

from liz.http.errors import error

OPEN_PATHS = frozenset({"/health"})


class BearerAuth:
    """Pure ASGI middleware: refuses a request without the key before any route runs."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS:
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not secrets.compare_digest(given, self.expected):
                response = error(
                    "missing or wrong API key: send Authorization: Bearer <LIZ_API_KEY>", 401
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
