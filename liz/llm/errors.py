"""LLM failures in liz's own terms: every ``openai`` exception is translated here, once."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

import aiohttp
import openai

from liz.errors import LLMError
from liz.llm.public_errors import endpoint_error

UPSTREAM_FAILED = 502  # the LLM endpoint answered, but with an error
UNAVAILABLE = 503  # unreachable, timed out or rate limited: worth trying again later
# What an HTTP client is told of an answer that was not what was asked for.
UNUSABLE_ANSWER = "the model's answer could not be used; try again, or rephrase the message"


class LLMOutputError(LLMError):
    """The model answered, but not with what was asked for (invalid or empty output).

    ``output`` holds the last raw answer, so a caller can log what the model said. An
    HTTP client is told only that the answer was unusable: ``message`` repeats the
    model's words and names the schema's insides, which are for the operator.
    """

    status = UPSTREAM_FAILED

    def __init__(self, message: str, *, output: str | None = None) -> None:
        super().__init__(message, public=UNUSABLE_ANSWER)
        self.output = output


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait according to ``retry-after-ms`` or ``Retry-After`` (seconds or a date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _upstream_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        # OpenAI's shape is {"error": {"message": ...}}; the SDK sometimes hands us the inner dict.
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return exc.message


def translate_openai_error(exc: openai.OpenAIError, *, model: str) -> LLMError:
    """The ``LLMError`` to raise for an ``openai`` exception met while calling ``model``."""
    if isinstance(exc, openai.APITimeoutError) and not _connection_failed(exc):
        return LLMError(
            f"the LLM endpoint did not answer in time (model {model})", status=UNAVAILABLE
        )
    if isinstance(exc, openai.APIConnectionError):  # a timeout is one too
        return LLMError(
            f"cannot reach the LLM endpoint at {exc.request.url} (model {model}): "
            "check OPENAI_BASE_URL and that the server is running",
            status=UNAVAILABLE,
            public=f"cannot reach the LLM endpoint (model {model}); try again later",
        )
    if isinstance(exc, openai.APIStatusError):
        retry_after = parse_retry_after(exc.response.headers)
        detail = _upstream_message(exc)
        public = endpoint_error(exc.status_code, model, retry_after)
        if isinstance(exc, openai.RateLimitError):
            return LLMError(
                f"the LLM endpoint is rate limiting requests (model {model}): {detail}",
                status=UNAVAILABLE,
                retry_after=retry_after,
                public=public,
                upstream_status=exc.status_code,
            )
        hint = ""
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            hint = " (check OPENAI_API_KEY or OPENROUTER_API_KEY)"
        elif isinstance(exc, openai.NotFoundError):
            hint = " (check the model name: LIZ_SMALL_MODEL, LIZ_LARGE_MODEL, LIZ_EMBEDDING_MODEL)"
        return LLMError(
            f"the LLM endpoint answered {exc.status_code} (model {model}): {detail}{hint}",
            status=UPSTREAM_FAILED,
            retry_after=retry_after,
            public=public,
            upstream_status=exc.status_code,
        )
    return LLMError(
        f"the LLM call failed (model {model}): {exc}",
        status=UPSTREAM_FAILED,
        public=f"the LLM call failed (model {model})",
    )


def _connection_failed(exc: BaseException) -> bool:
    """Whether a "timeout" was in truth a refused or dropped connection.

    The SDK's aiohttp transport (liz.llm.endpoint) reports any broken connection as
    a connect timeout; aiohttp's own error, further down the chain, tells them apart.
    """
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(
            cause, aiohttp.ServerTimeoutError
        ):
            return True
        cause = cause.__cause__
    return False
