"""What one span costs the OpenTelemetry SDK, part by part, in this process (bench/observe.py).

Turns shaped as liz's (a server span, the turn with an event per chain step, an LLM call,
with liz's attributes) made through the SDK alone, its processor and exporter added one at
a time; the CPU time of the whole process (the export thread included) per span. First,
the same number of spans through liz's ``span`` with tracing unconfigured.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from liz.observe.tracing import span

STEPS = 7
SPANS_PER_TURN = 3  # the server's, the turn's (its steps are events on it), the chat call's
CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "scripted-large",
    "liz.llm.purpose": "reply",
    "server.address": "127.0.0.1",
    "server.port": 8765,
}
CHAT_ANSWER = {
    "gen_ai.response.model": "scripted-large",
    "gen_ai.usage.input_tokens": 812,
    "gen_ai.usage.output_tokens": 31,
    "gen_ai.response.finish_reasons": ["stop"],
}
STEP = {"liz.step.duration_ms": 1.2, "liz.step.own_ms": 0.4}
TURN = {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.id": "business-advisor",
    "gen_ai.agent.name": "Morgan",
    "liz.source": "http",
}


class Dropped(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class EncodedOnly(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        encode_spans(spans).SerializePartialToString()
        return SpanExportResult.SUCCESS


def one_turn(tracer: trace.Tracer) -> None:
    server = tracer.start_span("POST", None, trace.SpanKind.SERVER, {"url.path": "/agent/input"})
    turn = tracer.start_span(
        "invoke_agent Morgan", trace.set_span_in_context(server), attributes=TURN
    )
    chat = tracer.start_span(
        "chat scripted-large", trace.set_span_in_context(turn), trace.SpanKind.CLIENT, CHAT
    )
    chat.set_attributes(CHAT_ANSWER)
    chat.end()
    for number in range(STEPS):
        turn.add_event("liz.step", {**STEP, "liz.step.name": f"step {number}"})
    turn.set_attributes({"liz.route": "conversation", "liz.outcome": "reply", "liz.status": "ok"})
    turn.end()
    server.set_attribute("http.response.status_code", 200)
    server.end()


def ten_span_turn(tracer: trace.Tracer) -> None:
    """A turn as liz traced it before: a span per chain step, nested as the onion runs."""
    server = tracer.start_span("POST", None, trace.SpanKind.SERVER, {"url.path": "/agent/input"})
    turn = tracer.start_span(
        "invoke_agent Morgan", trace.set_span_in_context(server), attributes=TURN
    )
    parent, steps = turn, []
    for number in range(STEPS):
        step = tracer.start_span(f"step {number}", trace.set_span_in_context(parent))
        steps.append(step)
        parent = step
    chat = tracer.start_span(
        "chat scripted-large", trace.set_span_in_context(parent), trace.SpanKind.CLIENT, CHAT
    )
    chat.set_attributes(CHAT_ANSWER)
    chat.end()
    for step in reversed(steps):
        step.set_attribute("liz.step.own_ms", 0.4)
        step.end()
    turn.set_attributes({"liz.route": "conversation", "liz.outcome": "reply", "liz.status": "ok"})
    turn.end()
    server.set_attribute("http.response.status_code", 200)
    server.end()


def unconfigured_turn(depth: int = SPANS_PER_TURN) -> None:
    """A turn's spans through liz's own ``span``; this process never configures tracing."""
    if depth:
        with span("invoke_agent") as current:
            if current is not None:
                current.add_event("liz.step", STEP)
            unconfigured_turn(depth - 1)


def unconfigured_microseconds(turns: int) -> float:
    began = time.process_time()
    for _ in range(turns):
        unconfigured_turn()
    return (time.process_time() - began) / (turns * SPANS_PER_TURN) * 1e6


def microseconds_per_turn(
    exporter: SpanExporter | None, turns: int, shape: Callable[[trace.Tracer], None] = one_turn
) -> float:
    provider = TracerProvider()
    if exporter is not None:
        batches = BatchSpanProcessor(exporter, max_queue_size=8192, max_export_batch_size=2048)
        provider.add_span_processor(batches)
    tracer = provider.get_tracer("liz")
    for _ in range(200):
        shape(tracer)
    provider.force_flush()
    began = time.process_time()
    for number in range(turns):
        shape(tracer)
        if number % 50 == 49:
            time.sleep(0.005)  # as between requests: the export thread keeps up, none is dropped
    provider.force_flush()
    spent = time.process_time() - began
    provider.shutdown()
    return spent / turns * 1e6


def span_cost_rows(receiver: str, turns: int) -> list[list[str]]:
    """The table's rows: each part, its microseconds of CPU per span, and what it adds."""
    parts: list[tuple[str, SpanExporter | None]] = [
        ("a span started and ended (no processor)", None),
        ("+ the batch processor's queue (an exporter that drops)", Dropped()),
        ("+ OTLP protobuf encoding", EncodedOnly()),
        ("+ OTLP/HTTP to the receiver (as liz exports)", OTLPSpanExporter(f"{receiver}/v1/traces")),
    ]
    unconfigured = unconfigured_microseconds(turns * 10)
    rows = [["tracing unconfigured: liz's `span` (no SDK call)", f"{unconfigured:.2f}", ""]]
    before = 0.0
    for name, exporter in parts:
        cost = microseconds_per_turn(exporter, turns) / SPANS_PER_TURN
        rows.append([name, f"{cost:.1f}", f"{cost - before:+.1f}" if before else ""])
        before = cost
    return rows


def shape_rows(turns: int) -> list[list[str]]:
    """A turn's SDK CPU (OTLP encoding included), shaped as now and as before, taking turns."""
    now, before = 0.0, 0.0
    for _ in range(3):
        now += microseconds_per_turn(EncodedOnly(), turns // 3)
        before += microseconds_per_turn(EncodedOnly(), turns // 3, ten_span_turn)
    return [
        ["ten spans, one per chain step (liz before)", f"{before / 3:.0f}", "1.00"],
        ["three spans, the steps events on the turn's", f"{now / 3:.0f}", f"{now / before:.2f}"],
    ]
