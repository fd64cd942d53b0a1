"""How every HTTP failure is answered: ``{"error": "<what is wrong>"}`` with its status."""

from __future__ import annotations

import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from liz.errors import LizError

logger = logging.getLogger(__name__)


def error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def liz_error(request: Request, exc: Exception) -> Response:
    """A ``LizError`` raised by any route, facts routes included."""
    if not isinstance(exc, LizError):  # Starlette only routes LizErrors here
        raise exc
    return error(exc.message, exc.status)


async def http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (404 for an unknown path, 405 for a wrong method, ...)."""
    if not isinstance(exc, HTTPException):
        raise exc
    return error(exc.detail, exc.status_code)


exception_handlers = {LizError: liz_error, HTTPException: http_exception}
