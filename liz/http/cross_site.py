"""What a web page on another site cannot make a browser do to this server.

- ``JsonBodiesOnly``: a POST, PUT or PATCH must say ``Content-Type: application/json``
  (415 otherwise). A browser sends a cross-site ``text/plain`` or form POST without
  asking first (no CORS preflight); a JSON one it may send only when CORS allows it.
- ``HostCheck``: the ``Host`` header must name this server (Starlette's
  ``TrustedHostMiddleware``), so a DNS-rebinding page cannot reach a loopback server.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from liz.config import Settings
from liz.errors import InputError
from liz.http.error_responses import error_response

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
_TRUSTED = "liz.host_trusted"


class NotJson(InputError):
    status = 415

    def __init__(self, given: str) -> None:
        said = f"Content-Type {given!r}" if given else "no Content-Type"
        super().__init__(
            f"this request has {said}; send a JSON body with Content-Type: application/json"
        )


def is_json(content_type: str) -> bool:
    media_type = content_type.partition(";")[0].strip().lower()
    return media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )


class JsonBodiesOnly:
    """Pure ASGI middleware: writes that are not JSON are a 415, before any route runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in WRITE_METHODS:
            given = dict(scope["headers"]).get(b"content-type", b"").decode("latin-1")
            if not is_json(given):
                request_id = scope.get("state", {}).get("request_id")
                await error_response(NotJson(given), request_id)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _in_process_test(scope: Scope) -> bool:
    """Starlette's TestClient (``Host: testserver``), which no network peer can be: a
    server names a peer by its address, and this client calls itself ``testclient``."""
    client = scope.get("client") or ("",)
    return bool(client[0] == "testclient")


def allowed_hosts(settings: Settings) -> list[str]:
    """``LIZ_ALLOWED_HOSTS``, or the loopback names when it is empty."""
    return list(settings.liz_allowed_hosts) or list(LOOPBACK_HOSTS)


class HostCheck:
    """Pure ASGI middleware: Starlette's trusted-host check, refusing with liz's JSON error
    that names the setting to change."""

    def __init__(self, app: ASGIApp, hosts: Sequence[str]) -> None:
        self.app = app
        self.hosts = list(hosts)
        self.check = TrustedHostMiddleware(self._trusted, allowed_hosts=hosts, www_redirect=False)

    async def _trusted(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[_TRUSTED] = True
        await self.app(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _in_process_test(scope):
            await self.app(scope, receive, send)
            return

        async def send_if_trusted(message: Message) -> None:
            if scope.get(_TRUSTED):  # the check's own plain-text refusal is dropped
                await send(message)

        await self.check(scope, receive, send_if_trusted)
        if not scope.get(_TRUSTED):
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            refusal = InputError(
                f"this server does not answer for host {host!r}; it answers for "
                f"{', '.join(self.hosts)}. Add the name to LIZ_ALLOWED_HOSTS to serve it"
            )
            await error_response(refusal, scope.get("state", {}).get("request_id"))(
                scope, receive, send
            )
