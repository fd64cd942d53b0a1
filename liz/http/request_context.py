"""Every request gets an id (``X-Request-Id``), and no failure escapes without an answer.

Pure ASGI middleware, the outermost of liz's own: it names the request (keeping a
well-formed ``X-Request-Id`` the client or a proxy sent), returns the id on every
response, and turns any exception no route handled into the answer
:func:`liz.errors.caller.as_liz_error` gives it: a 503 for a database outage, a 500 with
the request id for anything unexpected, whose details go only to the log.
"""

from __future__ import annotations

import logging
import re
import uuid

from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from liz.db.health import outage_log
from liz.errors import InternalError, StorageError
from liz.errors.caller import as_liz_error
from liz.http.error_responses import error_response, log_failure
from liz.observe.tracing import trace_ids

logger = logging.getLogger(__name__)

REQUEST_ID_HEADER = "X-Request-Id"
_WELL_FORMED_ID = re.compile(rb"[A-Za-z0-9._:-]{1,64}")


def _engine(scope: Scope) -> AsyncEngine | None:
    """The database engine of the app serving ``scope``, when it has one yet."""
    framework = getattr(getattr(scope.get("app"), "state", None), "framework", None)
    return getattr(getattr(framework, "runtime", None), "engine", None)


class RequestContext:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(REQUEST_ID_HEADER.lower().encode(), b"")
        ids = trace_ids()  # with tracing on, the request id is the trace id
        fresh = ids[0] if ids is not None else uuid.uuid4().hex
        request_id = given.decode() if _WELL_FORMED_ID.fullmatch(given) else fresh
        scope.setdefault("state", {})["request_id"] = request_id
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                headers.append(REQUEST_ID_HEADER, request_id)
                # No browser may read an answer as anything but its declared type.
                headers.setdefault("X-Content-Type-Options", "nosniff")
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            failure = as_liz_error(exc)
            if started:  # too late to answer; the server closes the connection
                logger.error("request %s failed after its answer began", request_id, exc_info=exc)
                raise
            if isinstance(failure, InternalError):
                log_failure(failure, request_id, exc)
            elif isinstance(failure, StorageError) and (engine := _engine(scope)) is not None:
                outage_log(engine).failed(exc, failure.message)
            else:
                logger.warning("request %s failed: %s (%r)", request_id, failure.message, exc)
            await error_response(failure, request_id)(scope, receive, send_with_id)
