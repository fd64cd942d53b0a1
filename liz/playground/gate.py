"""The key prompt: how a browser gets into a page when the server needs a key.

A browser's navigation cannot carry ``Authorization``, so with ``LIZ_API_KEY`` set a
page request without it would only ever meet the API's JSON 401. This gate, in
front of the API-key guard, answers that request with the same 401 but with a small
page that asks for the key. The key goes to ``sessionStorage`` (this tab only, never
a cookie); the prompt then fetches the page with ``Authorization`` and shows it, and
the page sends the key with every API call. A request that carries credentials goes
on to the guard, which checks them as it checks every request: this gate never
decides who gets in, and its prompt holds no data.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from liz.playground.pages import render_page


class KeyPromptGate:
    """Pure ASGI middleware: a key prompt (401) for credential-less requests for ``pages``."""

    def __init__(self, app: ASGIApp, pages: Iterable[str]) -> None:
        self.app = app
        self.pages = frozenset(pages)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] in ("GET", "HEAD")
            and scope["path"] in self.pages
            and b"authorization" not in dict(scope["headers"])
        ):
            response = render_page("key_prompt.html", status_code=401)
            response.headers["WWW-Authenticate"] = 'Bearer realm="liz"'
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
