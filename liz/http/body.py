"""Reading request bodies: a size limit while streaming, bounded JSON, Liz's ``{"input": {...}}``.

Every limit answers a 4xx that names it, never a 500: a body over
:data:`MAX_BODY_BYTES` is refused as soon as the declared length or the bytes read so
far pass it (413, the rest is never read); JSON deeper than :data:`MAX_JSON_DEPTH`,
numbers longer than :data:`MAX_NUMBER_LENGTH` characters, lone surrogates and inputs
that break :mod:`liz.input_rules` are 400s.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from liz.errors import InputError
from liz.http.errors import error_response
from liz.input_rules import input_problems, unicode_problem
from liz.types import InputObject, InputSource

MAX_BODY_BYTES = 1_000_000
MAX_JSON_DEPTH = 32
MAX_NUMBER_LENGTH = 100

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_NUL = re.compile("\x00")


class BodyTooLarge(InputError):
    status = 413

    def __init__(self, limit: int) -> None:
        super().__init__(f"request body is larger than {limit} bytes; send less")


class BodyLimit:
    """Pure ASGI middleware: no request body may exceed ``max_bytes``.

    A declared ``Content-Length`` over the limit is refused before the app runs; a
    chunked body is counted as it arrives and refused at the first chunk past the
    limit, so a huge body is never held in memory.
    """

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            request_id = scope.get("state", {}).get("request_id")
            await error_response(BodyTooLarge(self.max_bytes), request_id)(scope, receive, send)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, limited_receive, send)


def json_depth(text: str) -> int:
    """How deeply arrays and objects nest in ``text``, found without parsing it."""
    skeleton = _NOT_BRACKET.sub("", _STRING.sub("", text))
    depth = deepest = 0
    for bracket in skeleton:
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _number(kind: type[int] | type[float]) -> Any:
    def parse(literal: str) -> int | float:
        if len(literal) > MAX_NUMBER_LENGTH:
            raise InputError(
                f"request body has a number {len(literal)} characters long; "
                f"numbers may have at most {MAX_NUMBER_LENGTH}"
            )
        value = kind(literal)
        if not math.isfinite(value):
            raise InputError(f"request body has the number {literal}, too large to represent")
        return value

    return parse


def _not_json(constant: str) -> Any:
    raise InputError(f"request body has {constant}, which JSON does not allow; use a number")


def _check_strings(value: Any, where: str) -> None:
    """Lone surrogates anywhere (\\ud800 escapes) cannot be stored; refuse them here."""
    if isinstance(value, str):
        if (problem := unicode_problem(value, control=_NUL)) is not None:
            raise InputError(f"{where} {problem}")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key, f"{where} has a key that")
            _check_strings(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_strings(item, f"{where}[{index}]")


def parse_json(body: bytes) -> Any:
    """Parse a request body with bounded depth and number size; raise :class:`InputError`."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"request body is not valid UTF-8: {exc.reason} at byte {exc.start}"
        ) from exc
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise InputError(
            f"request body nests {depth} levels deep; at most {MAX_JSON_DEPTH} are accepted"
        )
    try:
        payload = json.loads(
            text, parse_int=_number(int), parse_float=_number(float), parse_constant=_not_json
        )
    except json.JSONDecodeError as exc:
        raise InputError(f"request body is not valid JSON: {exc}") from exc
    _check_strings(payload, "request body")
    return payload


def describe_validation_error(exc: ValidationError, prefix: str) -> str:
    parts = []
    for problem in exc.errors():
        where = ".".join(str(part) for part in (prefix, *problem["loc"]))
        parts.append(f"{where}: {problem['msg']}")
    return "; ".join(parts)


async def read_input(request: Request) -> InputObject:
    """Parse and check the body; raise an :class:`InputError` saying what is wrong."""
    payload = parse_json(await request.body())
    if not isinstance(payload, dict) or not isinstance(payload.get("input"), dict):
        raise InputError('request body must be a JSON object like {"input": {"agentId": ..., ...}}')
    fields: dict[str, Any] = payload["input"]
    if fields.get("source", InputSource.NETWORK.value) != InputSource.NETWORK.value:
        raise InputError("input.source cannot be set over HTTP; leave it out")
    if "route" in fields:
        raise InputError("input.route cannot be set over HTTP; the router picks the route")
    try:
        input = InputObject.model_validate({**fields, "source": InputSource.NETWORK})
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, "input")) from exc
    # Checked here as well as by the validate_input step, so a chain without that step
    # (or with steps before it) never sees, stores or forwards a bad input.
    if problems := input_problems(input):
        raise InputError("invalid input: " + "; ".join(problems))
    return input
