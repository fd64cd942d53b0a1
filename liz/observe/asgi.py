"""The HTTP server span: every request's trace, continuing an incoming ``traceparent``.

Outermost of liz's ASGI middleware, so the request id (liz.http.request_context) can
be the trace id, and every span of the request (the turn, its steps, its LLM calls)
is a child of this one. With tracing off it passes the request straight on.
"""

from __future__ import annotations

from opentelemetry.propagate import extract
from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from liz.observe.tracing import span, tracing_on


class ServerSpan:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not tracing_on():
            await self.app(scope, receive, send)
            return
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        method = scope["method"]
        attributes = {"http.request.method": method, "url.path": scope["path"]}
        with span(method, attributes, kind=SpanKind.SERVER, context=extract(carrier)) as current:

            async def send_status(message: Message) -> None:
                if message["type"] == "http.response.start" and current is not None:
                    status = int(message["status"])
                    current.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        current.set_status(Status(StatusCode.ERROR))
                await send(message)

            await self.app(scope, receive, send_status)
