"""Tracing set up from the standard ``OTEL_*`` variables, and the one way liz opens a span.

Unconfigured, :func:`span` is a no-op that allocates nothing: no provider, no context
switch. Configured (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``..._TRACES_ENDPOINT``, or
``OTEL_TRACES_EXPORTER=otlp|console``), spans go through the official SDK's batch
processor to the OTLP/HTTP exporter, which reads the rest of the ``OTEL_*`` variables.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from contextvars import Token
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

logger = logging.getLogger(__name__)

CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


class _State:
    """The process's tracing: one provider, configured once per distinct environment."""

    tracer: Tracer | None = None
    provider: TracerProvider | None = None
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
    provider = TracerProvider(resource=_HashedResource(resource.attributes, resource.schema_url))
    provider.add_span_processor(_batch_processor(kind, env))
    _state.provider = provider
    _state.tracer = provider.get_tracer("liz")
    if not _state.global_set:
        # Your own spans (opentelemetry.trace.get_tracer) join liz's traces. The API lets a
        # process set its provider once: this one follows whatever liz is configured with.
        trace.set_tracer_provider(_CurrentProvider())
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


def _batch_processor(kind: str, env: Mapping[str, str]) -> BatchSpanProcessor:
    """Larger, rarer exports than the SDK's defaults unless an ``OTEL_BSP_*`` variable is
    set: the processor's thread takes the GIL from the turns less often."""
    exporter = _exporter(kind)
    if any(name.startswith("OTEL_BSP_") and value.strip() for name, value in env.items()):
        return BatchSpanProcessor(exporter)  # the SDK reads them
    return BatchSpanProcessor(exporter, max_queue_size=8192, max_export_batch_size=2048)


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


def _exporter(kind: str) -> SpanExporter:
    if kind == "console":
        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def shutdown_tracing() -> None:
    """Send what is buffered and stop exporting."""
    if _state.provider is not None:
        _state.provider.shutdown()
    _state.provider = None
    _state.tracer = None
    _state.signature = None


def flush_tracing() -> None:
    """Export every finished span now (tests, and a CLI command before it exits)."""
    if _state.provider is not None:
        _state.provider.force_flush()


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

    The block gets None too for a span that is not sampled, so it builds no attributes.
    An exception leaving the block is recorded on the span and marks it as an error.
    """
    tracer = _state.tracer
    if tracer is None:
        return _OFF
    return _Scope(tracer.start_span(name, context, kind, attributes, links))


class _Scope:
    """The SDK's ``start_as_current_span`` without its layers of generator context managers,
    which cost more than the span itself."""

    __slots__ = ("_span", "_token")

    def __init__(self, current: Span) -> None:
        self._span = current
        self._token: Token[Context] | None = None

    def __enter__(self) -> Span | None:
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self._span if self._span.is_recording() else None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if self._token is not None:
            otel_context.detach(self._token)
        if isinstance(exc, Exception) and self._span.is_recording():
            self._span.record_exception(exc)
            self._span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        self._span.end()


def trace_ids() -> tuple[str, str] | None:
    """The current trace and span id in hex, or None outside a recorded span."""
    if _state.tracer is None:
        return None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")
