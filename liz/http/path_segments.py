"""Ids in paths, whatever they hold: ``/agents/a/users/org%2Falice/facts`` is org/alice's.

A server decodes the whole path before routing, so an encoded ``/`` in a userId would
split it in two. :class:`PathSegments` (pure ASGI middleware) rebuilds the path from
the raw one, decoding each segment but keeping ``%2F`` and ``%25`` encoded; a route
whose path names ``{userId:segment}`` gets the id decoded whole.

NUL (``%00``) in the path or the query is refused with a 400 before any route runs:
no id or value may hold it (PostgreSQL cannot store it in text, and SQLite would
store something no client can name), so it is a bad request on both databases.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from starlette.convertors import Convertor, register_url_convertor
from starlette.types import ASGIApp, Receive, Scope, Send

from liz.errors import InputError
from liz.http.error_responses import error_response

NUL_REFUSED = InputError(
    "the request's path or query holds NUL (%00), which no id or value may contain; remove it"
)


def holds_nul(scope: Scope) -> bool:
    """Whether the request's path or query string holds NUL, raw or percent-encoded."""
    raw_path = scope.get("raw_path") or scope.get("path", "").encode()
    query = scope.get("query_string", b"")
    return any(b"%00" in part or b"\0" in part for part in (raw_path, query))


def _segment(raw: str) -> str:
    """One raw path segment decoded, but for what would break the path: / and %."""
    return unquote(raw).replace("%", "%25").replace("/", "%2F")


def routing_path(raw_path: bytes) -> str:
    """The path to route on: each segment decoded, a ``/`` or ``%`` inside one kept encoded."""
    text = raw_path.decode("latin-1")
    return "/".join(_segment(part) for part in text.split("/"))


class SegmentConvertor(Convertor[str]):
    """``{name:segment}``: one path segment as :func:`routing_path` left it, decoded."""

    regex = "[^/]+"

    def convert(self, value: str) -> str:
        return unquote(value)

    def to_string(self, value: str) -> str:
        return quote(value, safe="")


register_url_convertor("segment", SegmentConvertor())


class PathSegments:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and holds_nul(scope):
            request_id = scope.get("state", {}).get("request_id")
            await error_response(NUL_REFUSED, request_id)(scope, receive, send)
            return
        raw_path = scope.get("raw_path")
        if scope["type"] == "http" and raw_path and b"%" in raw_path:
            scope = {**scope, "path": routing_path(raw_path)}
        await self.app(scope, receive, send)
