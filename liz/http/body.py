"""Reading request bodies: a size limit while streaming, bounded JSON, Liz's ``{"input": {...}}``.

Every limit answers a 4xx that names it, never a 500: a body over
:data:`MAX_BODY_BYTES` is refused as soon as the declared length or the bytes read so
far pass it (413, the rest is never read); a body still arriving ``LIZ_BODY_TIMEOUT``
seconds after the headers is refused with 408 and its connection closed; JSON nested deeper than
:data:`MAX_JSON_DEPTH`, numbers of more than :data:`MAX_NUMBER_DIGITS` digits or too
large for a float, ``NaN``, lone surrogates, NUL and inputs that break
:mod:`liz.runtime.input_rules` are 400s. Each check runs at C speed (regular expressions
without backtracking, ``bytes.replace``, the parser, ``json.dumps``), so a hostile
megabyte costs milliseconds, not seconds.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from liz.errors import InputError
from liz.http.error_responses import error_response
from liz.runtime.input_rules import input_problems
from liz.types import InputObject, InputSource

MAX_BODY_BYTES = 1_000_000
MAX_JSON_DEPTH = 32
MAX_NUMBER_DIGITS = 100

_ESCAPED = re.compile(rb"\\.")  # an escape inside a JSON string: \" or \\ or \n ...
_STRING = re.compile(rb'"[^"]*"')  # once escapes are gone, a string has no quote inside
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_BRACKETS_ONLY = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_SURROGATE = re.compile("[\ud800-\udfff]")


class BodyTooLarge(InputError):
    status = 413

    def __init__(self, limit: int) -> None:
        super().__init__(f"request body is larger than {limit} bytes; send less")


class BodyTooSlow(InputError):
    status = 408

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"the request body took more than {seconds:g} seconds to arrive "
            "(LIZ_BODY_TIMEOUT); send it at once"
        )


class BodyLimit:
    """Pure ASGI middleware: no request body may exceed ``max_bytes``, nor take longer
    than ``timeout`` seconds to arrive once the headers are in.

    A declared ``Content-Length`` over the limit is refused before the app runs; a
    chunked body is counted as it arrives and refused at the first chunk past the
    limit, so a huge body is never held in memory. A body trickled a byte at a time
    would hold its connection (and a slot of ``LIZ_MAX_CONNECTIONS``) until the request
    deadline; it is refused at ``timeout`` instead.
    """

    def __init__(
        self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES, timeout: float | None = None
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

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
        whole = False  # once the body is in, receive() only waits for a disconnect
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout if self.timeout is not None else None

        async def limited_receive() -> Message:
            nonlocal received, whole
            if whole or deadline is None:
                message = await receive()
            else:
                try:
                    async with asyncio.timeout_at(deadline):
                        message = await receive()
                except TimeoutError:
                    raise BodyTooSlow(self.timeout or 0) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                whole = not message.get("more_body", False)
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, limited_receive, send)


def without_strings(body: bytes) -> bytes:
    """``body`` with its strings cut out: in JSON no quote is left inside a string once
    its escapes are gone."""
    return _STRING.sub(b"", _ESCAPED.sub(b"", body))


def nests_deeper_than(skeleton: bytes, limit: int) -> bool:
    """Whether arrays and objects nest more than ``limit`` levels in valid JSON without
    its strings. Each pass removes the innermost ``[]`` pairs: one level per pass."""
    if skeleton.count(b"[") + skeleton.count(b"{") <= limit:
        return False
    skeleton = skeleton.translate(_BRACKETS_ONLY, _NOT_BRACKETS)
    for _ in range(limit):
        skeleton = skeleton.replace(b"[]", b"")
        if not skeleton:
            return False
    return True


def _not_json(constant: str) -> Any:
    raise InputError(f"request body has {constant}, which JSON does not allow; use a number")


def _check_values(payload: Any) -> None:
    """Refuse what parsed but cannot be stored: numbers too large for a float, lone
    surrogates (from ``\\ud800`` escapes) and NUL, anywhere in the body."""
    try:
        # C speed: allow_nan=False refuses the infinities that huge floats became.
        dumped = json.dumps(payload, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise InputError("request body has a number too large to represent") from None
    if surrogate := _SURROGATE.search(dumped):
        raise InputError(
            f"request body contains a lone surrogate (U+{ord(surrogate.group()):04X}), which "
            "is not valid Unicode; send UTF-8, or \\u escapes in pairs"
        )
    # dumps writes NUL as \u0000 and a backslash as \\: drop the latter first.
    if "\\u0000" in dumped.replace("\\\\", ""):
        raise InputError("request body contains the control character U+0000; remove it")


def parse_json(body: bytes) -> Any:
    """Parse a request body with bounded depth and number size; raise :class:`InputError`."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"request body is not valid UTF-8: {exc.reason} at byte {exc.start}"
        ) from exc
    too_deep = InputError(
        f"request body nests more than {MAX_JSON_DEPTH} levels deep; send flatter JSON"
    )
    skeleton = without_strings(body)
    # Before parsing, which would spend time on every digit of a huge number.
    if b"0" * (MAX_NUMBER_DIGITS + 1) in skeleton.translate(_DIGITS_AS_ZERO):
        raise InputError(
            f"request body has a number of more than {MAX_NUMBER_DIGITS} digits; "
            "send it as a string"
        )
    try:
        payload = json.loads(text, parse_constant=_not_json)
    except json.JSONDecodeError as exc:
        raise InputError(f"request body is not valid JSON: {exc}") from exc
    except RecursionError:  # the C parser stops cleanly at the interpreter's recursion limit
        raise too_deep from None
    if nests_deeper_than(skeleton, MAX_JSON_DEPTH):
        raise too_deep
    _check_values(payload)
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
