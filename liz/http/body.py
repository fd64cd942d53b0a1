"""Reading Liz's request body ``{"input": {...}}`` into an :class:`InputObject`."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request

from liz.errors import InputError
from liz.types import InputObject, InputSource

MAX_BODY_BYTES = 1_000_000


class BodyTooLarge(InputError):
    status = 413


def describe_validation_error(exc: ValidationError, prefix: str) -> str:
    parts = []
    for problem in exc.errors():
        where = ".".join(str(part) for part in (prefix, *problem["loc"]))
        parts.append(f"{where}: {problem['msg']}")
    return "; ".join(parts)


async def read_input(request: Request) -> InputObject:
    """Parse the body; raise an :class:`InputError` saying what is wrong."""
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise BodyTooLarge(f"request body is larger than {MAX_BODY_BYTES} bytes")
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"request body is not valid JSON: {exc}") from exc
    if not isinstance(payload, dict) or not isinstance(payload.get("input"), dict):
        raise InputError('request body must be a JSON object like {"input": {"agentId": ..., ...}}')
    fields: dict[str, Any] = payload["input"]
    if fields.get("source", InputSource.NETWORK.value) != InputSource.NETWORK.value:
        raise InputError("input.source cannot be set over HTTP; leave it out")
    if "route" in fields:
        raise InputError("input.route cannot be set over HTTP; the router picks the route")
    try:
        return InputObject.model_validate({**fields, "source": InputSource.NETWORK})
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, "input")) from exc
