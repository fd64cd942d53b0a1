"""Tracing set up from the standard ``OTEL_*`` variables, and the one way liz opens a span.

Unconfigured, :func:`span` is a no-op that allocates nothing: no provider, no context
switch. Configured (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``..._TRACES_ENDPOINT``, or
``OTEL_TRACES_EXPORTER=otlp|console``), spans go through the official SDK's batch
processor to the OTLP/HTTP exporter, which reads the rest of the ``OTEL_*`` variables
(liz.observe.span_export).
"""

from __future__ import annotations

import atexit
import logging
import os
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, cast

from opentelemetry import trace
from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span, SpanKind, Tracer

from liz.observe.span_export import OTLPExport, batch_processor, stop_seconds, within

logger = logging.getLogger(__name__)

CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


class _State:
    """The process's tracing: one provider, configured once per distinct environment."""

    tracer: Tracer | None = None
    provider: TracerProvider | None = None
    exporter: OTLPExport | None = None
    stop_seconds = 0.0
    capture_content = False
    signature: tuple[str, ...] | None = None
    global_set = False


_state = _State()


def tracing_wanted(environ: Mapping[str, str]) -> str | None:
    """The exporter the environment asks for (``otlp``, ``console``), or None for none."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporters = [e.strip() for e in environ.get("OTEL_TRACES_EXPORTER", "").split(",")]
    exporters = [e for e in exporters if e]
    if "none" in exporters:
        return None
    if "console" in exporters:
        return "console"
    if "otlp" in exporters or any(environ.get(name, "").strip() for name in _ENDPOINTS):
        return "otlp"
    return None


def configure_tracing(environ: Mapping[str, str] | None = None) -> bool:
    """Set tracing up as the environment says; True when spans are now exported.

    Called by every process liz opens (``open_runtime``); calling again with the same
    environment changes nothing, with another one replaces the exporter.
    """
    env = os.environ if environ is None else environ
    signature = tuple(f"{k}={v}" for k, v in sorted(env.items()) if k.startswith("OTEL_"))
    if signature == _state.signature:
        return _state.tracer is not None
    shutdown_tracing()
    _state.signature = signature
    _state.capture_content = env.get(CAPTURE_CONTENT, "").strip().lower() == "true"
    kind = tracing_wanted(env)
    if kind is None:
        return False
    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "liz"})
    resource = resource.merge(OTELResourceDetector().detect())
    # Stopped by liz (shutdown_tracing, at exit), so that a dead collector cannot hold the
    # process: the SDK's own exit hook waits for every retry of every batch.
    hashed = _HashedResource(resource.attributes, resource.schema_url)
    provider = TracerProvider(resource=hashed, shutdown_on_exit=False)
    processor, _state.exporter = batch_processor(kind, env)
    provider.add_span_processor(processor)
    _state.provider = provider
    _state.stop_seconds = stop_seconds(env)
    _state.tracer = provider.get_tracer("liz")
    if not _state.global_set:
        # Your own spans (opentelemetry.trace.get_tracer) join liz's traces. The API lets a
        # process set its provider once: this one follows whatever liz is configured with.
        trace.set_tracer_provider(_CurrentProvider())
        atexit.register(shutdown_tracing)
        _state.global_set = True
    logger.info("tracing on: spans exported by %s", kind)
    return True


class _HashedResource(Resource):
    """A resource that hashes once: the exporter hashes a span's resource for every span,
    and the SDK's hash writes the attributes out as JSON each time."""

    def __init__(self, attributes: Any, schema_url: str | None = None) -> None:
        super().__init__(attributes, schema_url)
        self._hash = super().__hash__()

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return super().__eq__(other)


class _CurrentProvider(trace.TracerProvider):
    """The API's global provider: tracers that use liz's provider of the moment."""

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Any = None,
    ) -> Tracer:
        given = (instrumenting_library_version, schema_url, attributes)
        return _CurrentTracer(instrumenting_module_name, given, {})


class _CurrentTracer(trace.Tracer):
    def __init__(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._name, self._args, self._kwargs = name, args, kwargs

    def _tracer(self) -> Tracer:
        provider = _state.provider
        if provider is None:
            return trace.NoOpTracer()
        return provider.get_tracer(self._name, *self._args, **self._kwargs)

    def start_span(self, *args: Any, **kwargs: Any) -> Span:
        return self._tracer().start_span(*args, **kwargs)

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        return self._tracer().start_as_current_span(*args, **kwargs)


def shutdown_tracing() -> None:
    """Send what is buffered, waiting at most the stop deadline, and stop exporting."""
    provider, exporter = _state.provider, _state.exporter
    if provider is None:
        return
    if exporter is None or not exporter.down:
        within(_state.stop_seconds, provider.force_flush)
    _stop(provider, exporter)


def flush_tracing() -> None:
    """Export every finished span now (a process closing its runtime, tests).

    Waits at most ``OTEL_BSP_EXPORT_TIMEOUT`` (1 s unless set), and not at all for a
    collector the last batch did not reach; spans not taken by then are dropped, tracing
    is stopped, and the next :func:`configure_tracing` starts it afresh.
    """
    provider, exporter = _state.provider, _state.exporter
    if provider is None:
        return
    if (exporter is None or not exporter.down) and within(
        _state.stop_seconds, provider.force_flush
    ):
        return
    logger.warning("tracing stopped: the collector is not taking spans; those not sent are dropped")
    _stop(provider, exporter)


def _stop(provider: TracerProvider, exporter: OTLPExport | None) -> None:
    if exporter is not None:
        exporter.stop()  # ends the exporter's retries, which the provider would wait for
    within(_state.stop_seconds, provider.shutdown)
    _state.provider = None
    _state.tracer = None
    _state.exporter = None
    _state.signature = None


def tracing_on() -> bool:
    return _state.tracer is not None


def capture_content() -> bool:
    """Whether message content may go in spans (only when the environment says so)."""
    return _state.tracer is not None and _state.capture_content


_OFF: AbstractContextManager[None] = nullcontext(None)


def span(
    name: str,
    attributes: Mapping[str, Any] | None = None,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    context: Any = None,
    links: Any = None,
) -> AbstractContextManager[Span | None]:
    """A span around the block, current inside it; None (and no cost) when tracing is off.

    An exception leaving the block is recorded on the span and marks it as an error. A
    span that is not sampled records nothing: check ``is_recording()`` before building
    costly attributes.
    """
    tracer = _state.tracer
    if tracer is None:
        return _OFF
    scope = tracer.start_as_current_span(name, context, kind, attributes, links)
    return cast(AbstractContextManager[Span | None], scope)


def trace_ids() -> tuple[str, str] | None:
    """The current trace and span id in hex, or None outside a recorded span."""
    if _state.tracer is None:
        return None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")
