"""How every HTTP failure is answered: ``{"error": "<what is wrong>"}`` with its status.

A ``LizError`` carries its own status and message; one with ``retry_after`` adds a
``Retry-After`` header. An unexpected failure is a 500 whose body names only the
request id (``X-Request-Id``); what went wrong goes to the log under that id.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from liz.errors import InternalError, LizError, LLMError
from liz.http.bodies import Error, json_response, wire

logger = logging.getLogger(__name__)


def error(message: str, status: int, headers: Mapping[str, str] | None = None) -> Response:
    return json_response(Error(error=message), status, dict(headers or {}))


def error_body(exc: LizError, request_id: str | None) -> dict[str, Any]:
    """The JSON a caller gets for ``exc`` (also the data of a server-sent ``error`` event)."""
    if isinstance(exc, InternalError):
        where = f"under request id {request_id}"
        message = f"internal error; the server log has the details {where}"
        return wire(Error(error=message, request_id=request_id))
    if isinstance(exc, LLMError) and exc.public is not None:
        # The provider's own words stay in the log (liz.pipeline logs the whole message).
        where = f"under request id {request_id}"
        return wire(Error(error=f"{exc.public}; the server log has the details {where}"))
    return wire(Error(error=exc.message, code=exc.code))


def retry_after_headers(exc: LizError) -> dict[str, str]:
    if exc.retry_after is None:
        return {}
    return {"Retry-After": str(max(1, math.ceil(exc.retry_after)))}


def log_failure(exc: LizError, request_id: str | None, cause: BaseException | None = None) -> None:
    """Log an internal error once, with its details and the request id the caller was given."""
    if isinstance(exc, InternalError):
        logger.error(
            "request %s failed: %s", request_id, exc.detail, exc_info=cause or exc.__cause__
        )


def error_response(exc: LizError, request_id: str | None) -> Response:
    headers = retry_after_headers(exc)
    if exc.status in (408, 413):
        # The rest of a body too large or too slow to read is never read: close the
        # connection instead of keeping it for the next request.
        headers["Connection"] = "close"
    return JSONResponse(error_body(exc, request_id), status_code=exc.status, headers=headers)


def request_id_of(request: Request) -> str | None:
    return getattr(request.state, "request_id", None)


async def liz_error(request: Request, exc: Exception) -> Response:
    """A ``LizError`` raised by any route, facts routes included."""
    if not isinstance(exc, LizError):  # Starlette only routes LizErrors here
        raise exc
    log_failure(exc, request_id_of(request))
    return error_response(exc, request_id_of(request))


async def http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (404 for an unknown path, 405 for a wrong method, ...)."""
    if not isinstance(exc, HTTPException):
        raise exc
    return error(exc.detail, exc.status_code, exc.headers)


exception_handlers = {LizError: liz_error, HTTPException: http_exception}
