"""An MCP server that writes what is not JSON-RPC to its stdout, logged at a bounded rate.

The ``mcp`` SDK logs a traceback for every such line (a server printing its own
chatter floods the log by megabytes a second) and hands the parse error to the
session. :class:`BadLines` takes those errors instead (the session's
``message_handler``): the first is logged as one line, then a count once per
:data:`REPORT_SECONDS`, as database outages are (liz.db.health). A server that writes
:data:`RESTART_AFTER` bad lines within :data:`WINDOW_SECONDS` is restarted, with one
line saying why (the supervisor backs off between restarts, so a server that always
does it costs a few lines a minute). The SDK's own per-line tracebacks are left out
of the log by :class:`SdkParseErrorsHidden`, since these lines say the same.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

REPORT_SECONDS = 10.0
# A server that writes this many lines that are not JSON-RPC in this many seconds is
# restarted: it is not speaking the protocol (a print() left in, a wrong command).
RESTART_AFTER = 100
WINDOW_SECONDS = 10.0
_SDK_PARSE_ERROR = "Failed to parse JSONRPC message from server"


class SdkParseErrorsHidden(logging.Filter):
    """Drops the ``mcp`` SDK's traceback for each line it cannot parse (counted here)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != _SDK_PARSE_ERROR


_HIDDEN = SdkParseErrorsHidden()


def hide_sdk_parse_errors() -> None:
    """Install the filter on the SDK's stdio logger, once per process."""
    sdk = logging.getLogger("mcp.client.stdio")
    if _HIDDEN not in sdk.filters:
        sdk.addFilter(_HIDDEN)


@dataclass
class BadLines:
    """The lines one MCP server wrote that are not JSON-RPC, while one session lasts."""

    server: str
    total: int = 0
    too_many: bool = False  # the server should be restarted
    _unreported: int = 0
    _reported_at: float = 0.0
    _window: list[float] = field(default_factory=list)

    def seen(self, error: Exception) -> None:
        now = time.monotonic()
        self.total += 1
        self._window = [at for at in self._window if now - at < WINDOW_SECONDS]
        self._window.append(now)
        if self.total == 1:
            self._reported_at = now
            logger.warning(
                "MCP server %r wrote a line that is not JSON-RPC to its stdout (%s); "
                "more are counted, not logged",
                self.server,
                _first_line(error),
            )
        else:
            self._unreported += 1
            if now - self._reported_at >= REPORT_SECONDS:
                logger.warning(
                    "MCP server %r wrote %d more lines that are not JSON-RPC in the last %.0f s",
                    self.server,
                    self._unreported,
                    now - self._reported_at,
                )
                self._unreported, self._reported_at = 0, now
        if len(self._window) >= RESTART_AFTER and not self.too_many:
            self.too_many = True
            logger.error(
                "MCP server %r wrote %d lines that are not JSON-RPC within %.0f s (%d in all); "
                "restarting it: check that it writes only MCP messages to stdout (logs go "
                "to stderr)",
                self.server,
                len(self._window),
                WINDOW_SECONDS,
                self.total,
            )


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:200]
