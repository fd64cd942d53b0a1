"""Keeping the bot token out of every log line: it is part of each Bot API URL.

A library under the bot (httpx, the Telegram client) may put a request's URL in a
log record or an exception's text. The filter rewrites any record that holds the
token before a handler writes it.
"""

from __future__ import annotations

import logging

SHOWN_INSTEAD = "<TELEGRAM_BOT_TOKEN>"


def redacted(text: str, secret: str) -> str:
    """``text`` with ``secret`` replaced."""
    return text.replace(secret, SHOWN_INSTEAD) if secret else text


class SecretRedaction(logging.Filter):
    """Replaces ``secret`` in a record's message and exception text."""

    def __init__(self, secret: str) -> None:
        super().__init__()
        self.secret = secret

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self.secret in message:
            record.msg, record.args = redacted(message, self.secret), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text and self.secret in record.exc_text:
            record.exc_text = redacted(record.exc_text, self.secret)
        return True


def redact_in_logs(secret: str) -> None:
    """Add the filter to every handler of the root logger (where all records end)."""
    for handler in logging.getLogger().handlers:
        handler.addFilter(SecretRedaction(secret))
