"""One error tree for the whole framework.

Errors split by whose fault they are: a :class:`UsageError` is a mistake in how
the framework is used or configured (raised early, says how to fix it); the
others are failures at run time, each carrying what a caller needs to answer.
"""

from __future__ import annotations


class LizError(Exception):
    """Base of every error this framework raises on purpose.

    ``message`` is shown to the caller as is, so it must say what is wrong and how to
    fix it without revealing internals. ``retry_after`` (seconds) is set when trying
    again later can help; HTTP answers it as a ``Retry-After`` header.
    """

    status: int = 500
    retry_after: float | None = None
    # A stable name for the error that callers may branch on (``budget_exceeded``).
    code: str | None = None

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class UsageError(LizError):
    """The framework was used or configured wrongly; the message says how to fix it."""

    status = 500


class InputError(LizError):
    """A request's input is malformed; answered with a 4xx and nothing stored."""

    status = 400


class Unauthorized(LizError):
    """No credentials, or credentials that do not check out."""

    status = 401


class Forbidden(LizError):
    """Valid credentials that do not allow this request (another user's data)."""

    status = 403


class NotFound(LizError):
    status = 404


class Conflict(LizError):
    """The request collides with another one (an ``Idempotency-Key`` in use)."""

    status = 409


class RequestTimeout(LizError):
    """The whole request took longer than ``LIZ_REQUEST_TIMEOUT``."""

    status = 504


class InternalError(LizError):
    """An unexpected failure. The caller sees only that it happened (and a request id);
    ``detail`` is for the log."""

    status = 500

    def __init__(self, detail: str) -> None:
        super().__init__("internal error")
        self.detail = detail


class LLMError(LizError):
    """The LLM endpoint failed or answered something unusable."""

    status = 502

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        public: str | None = None,
        upstream_status: int | None = None,
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after
        # The HTTP status the endpoint answered with, when it answered with an error.
        self.upstream_status = upstream_status
        # What a client of the HTTP API is told, when ``message`` holds what only the
        # server's operator should read: the provider's own words (an API key's last
        # characters), the endpoint's address.
        self.public = public


class LLMNotConfigured(LLMError):
    """No API key and no base URL: the server runs, but cannot call an LLM."""

    status = 503

    def __init__(self) -> None:
        super().__init__(
            "no LLM is configured: set OPENAI_API_KEY (OpenAI), OPENROUTER_API_KEY "
            "(OpenRouter) or OPENAI_BASE_URL (a local OpenAI-compatible server); "
            "without a key, set LIZ_SCRIPTED_LLM=true (or pass --scripted) for liz's scripted model"
        )


class StorageError(LizError):
    """The database failed or is missing something a feature needs."""

    status = 503

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


def syntax_error_line(exc: SyntaxError) -> str:
    """A user's syntax error as one line, as the file shows it: ``app.py, line 3: ...``."""
    where = f"{exc.filename or '<unknown file>'}, line {exc.lineno}"
    text = f": {exc.text.strip()}" if exc.text and exc.text.strip() else ""
    return f"{where}: {type(exc).__name__}: {exc.msg}{text}"
