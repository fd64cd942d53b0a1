"""Errors a chat platform's client raises, typed by what the connector loop does about them.

Each platform module translates its library's exceptions into these once, so the
loop never sees ``telegram`` or ``discord`` types.
"""

from __future__ import annotations

from liz.errors import LizError


class ConnectorError(LizError):
    """Base of every failure talking to a chat platform."""

    status = 502


class ConnectorAuthError(ConnectorError):
    """The bot's token is missing or refused; retrying will not help."""

    status = 401


class ConnectorRateLimited(ConnectorError):
    """The platform asked to wait ``retry_after`` seconds before the next call."""

    status = 429

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.wait_seconds = retry_after
        self.retry_after = retry_after


class ConnectorUnavailable(ConnectorError):
    """The platform could not be reached or failed for now; try again later."""

    status = 503


class ConnectorRejected(ConnectorError):
    """The platform refused this one call for good (the chat is gone, the bot was blocked)."""

    status = 400
