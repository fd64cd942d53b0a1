"""One error tree for the whole framework.

Errors split by whose fault they are: a :class:`UsageError` is a mistake in how
the framework is used or configured (raised early, says how to fix it); the
others are failures at run time, each carrying what a caller needs to answer.
"""

from __future__ import annotations


class LizError(Exception):
    """Base of every error this framework raises on purpose."""

    status: int = 500

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


class NotFound(LizError):
    status = 404


class LLMError(LizError):
    """The LLM endpoint failed or answered something unusable."""

    status = 502

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class LLMNotConfigured(LLMError):
    """No API key and no base URL: the server runs, but cannot call an LLM."""

    status = 503

    def __init__(self) -> None:
        super().__init__(
            "no LLM is configured: set OPENAI_API_KEY (OpenAI), OPENROUTER_API_KEY "
            "(OpenRouter) or OPENAI_BASE_URL (a local OpenAI-compatible server)"
        )


class StorageError(LizError):
    """The database failed or is missing something a feature needs."""

    status = 503
