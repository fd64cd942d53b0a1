"""How spans leave the process: the exporter the environment asks for, an outage of the
collector logged once, and a bounded wait for the last spans when the process stops.

The OTLP exporter logs a line for each retry of each batch; with the collector down that
is a few lines every few seconds, for as long as it stays down. Here its lines are held
while a batch is exported and, when the batch is lost, summed up in one warning, given
again only after the collector has answered in between. The batch processor logs a line
for every span it drops when its queue is full; those become one line a minute at most.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
    SpanExportResult,
)

from liz._compat import OTEL_BATCH_QUEUE_LOGGER

logger = logging.getLogger(__name__)

# How long a stopping process waits for its last spans, unless OTEL_BSP_EXPORT_TIMEOUT says.
STOP_SECONDS = 1.0


def batch_processor(
    kind: str, environ: Mapping[str, str]
) -> tuple[BatchSpanProcessor, OTLPExport | None]:
    """The processor for ``kind`` (``otlp``, ``console``), and the OTLP exporter when it is one.

    Larger, rarer exports than the SDK's defaults unless an ``OTEL_BSP_*`` variable is set:
    the processor's thread takes the GIL from the turns less often.
    """
    exporter: SpanExporter
    otlp = None
    if kind == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = otlp = OTLPExport(OTLPSpanExporter(), _endpoint(environ))
    if _queue_full not in logging.getLogger(OTEL_BATCH_QUEUE_LOGGER).filters:
        logging.getLogger(OTEL_BATCH_QUEUE_LOGGER).addFilter(_queue_full)
    if any(name.startswith("OTEL_BSP_") and value.strip() for name, value in environ.items()):
        return BatchSpanProcessor(exporter), otlp  # the SDK reads them
    return BatchSpanProcessor(exporter, max_queue_size=8192, max_export_batch_size=2048), otlp


def stop_seconds(environ: Mapping[str, str]) -> float:
    """The longest wait for the last spans: ``OTEL_BSP_EXPORT_TIMEOUT`` (ms) when set."""
    given = environ.get("OTEL_BSP_EXPORT_TIMEOUT", "").strip()
    try:
        return max(float(given) / 1000, 0.0) if given else STOP_SECONDS
    except ValueError:
        logger.warning(
            "OTEL_BSP_EXPORT_TIMEOUT=%r is not milliseconds; waiting %.1f s", given, STOP_SECONDS
        )
        return STOP_SECONDS


def within(seconds: float, work: Callable[[], object]) -> bool:
    """Run ``work`` in a thread of its own; True when it finished within ``seconds``."""
    thread = threading.Thread(target=work, name="liz-tracing-stop", daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive()


class _HeldLines(logging.Filter):
    """Keeps the exporter's own log lines while this module exports a batch on the thread."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    def hold(self) -> None:
        self._local.lines = []

    def release(self) -> list[str]:
        lines: list[str] = getattr(self._local, "lines", None) or []
        self._local.lines = None
        return lines

    def filter(self, record: logging.LogRecord) -> bool:
        lines = getattr(self._local, "lines", None)
        if lines is None:
            return True
        lines.append(record.getMessage())
        return False


_held = _HeldLines()


class _QueueFull(logging.Filter):
    """The batch processor's "Queue full" lines (one per span dropped: thousands a second
    under a load the exporter cannot keep up with) as one line a minute at most, saying
    how many spans were dropped since the last one."""

    def __init__(self, every: float = 60.0) -> None:
        super().__init__()
        self.every = every
        self._dropped = 0
        self._next = 0.0
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Queue full"):
            return True
        now = time.monotonic()
        with self._lock:
            self._dropped += 1
            if now < self._next:
                return False
            self._next = now + self.every
            dropped, self._dropped = self._dropped, 0
        record.msg = (
            "spans are dropped: the span queue is full (%d since the last time this was "
            "said, at most once a minute); sample the turns (OTEL_TRACES_SAMPLER) or give the "
            "queue room (OTEL_BSP_MAX_QUEUE_SIZE)"
        )
        record.args = (dropped,)
        return True


_queue_full = _QueueFull()
_filtered: set[str] = set()


class OTLPExport(SpanExporter):
    """The SDK's OTLP exporter, its failures reported once per outage, and stoppable."""

    def __init__(self, exporter: SpanExporter, endpoint: str) -> None:
        self._exporter = exporter
        self._endpoint = endpoint
        self.down = False  # the last batch did not reach the collector
        self._stopped = False
        name = type(exporter).__module__  # where the exporter logs its retries
        if name not in _filtered:
            logging.getLogger(name).addFilter(_held)
            _filtered.add(name)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._stopped:
            return SpanExportResult.FAILURE
        _held.hold()
        try:
            result = self._exporter.export(spans)
        finally:
            lines = _held.release()
        if result is SpanExportResult.SUCCESS:
            if self.down:
                logger.info("spans reach %s again", self._endpoint)
            self.down = False
        elif not self.down and not self._stopped:
            self.down = True
            why = lines[0] if lines else "the export failed"
            logger.warning(
                "spans are not reaching %s (%s); they are dropped until it answers, "
                "and this is logged again only after it has",
                self._endpoint,
                why,
            )
        return result

    def stop(self) -> None:
        """Give up on the collector: its retries end now and later batches are dropped."""
        if not self._stopped:
            self._stopped = True
            self._exporter.shutdown()

    def shutdown(self) -> None:
        self.stop()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._exporter.force_flush(timeout_millis)


def _endpoint(environ: Mapping[str, str]) -> str:
    """Where the spans go, as the exporter reads it from the environment."""
    traces = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
    return base.rstrip("/") + "/v1/traces"
