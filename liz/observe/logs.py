"""``LIZ_LOG_FORMAT=json``: one JSON object per log line, with the trace and span ids.

The default (``text``) stays the readable line. In JSON each record carries
``trace_id`` and ``span_id`` when it was logged inside a recorded span, so a log line
leads to its trace in the backend.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Literal

from liz.observe.tracing import trace_ids

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonLogFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        ids = trace_ids()
        if ids is not None:
            line["trace_id"], line["span_id"] = ids
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def log_formatter(log_format: Literal["text", "json"]) -> logging.Formatter:
    """The formatter for ``Settings.liz_log_format`` (``LIZ_LOG_FORMAT``)."""
    return JsonLogFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
