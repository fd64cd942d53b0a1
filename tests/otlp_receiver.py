"""A small OTLP/HTTP trace receiver for the tests: it keeps every span it is sent.

(No tests here.) Spans are decoded with opentelemetry-proto, as a collector would.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from liz.testing.threaded_server import serve_in_thread


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    links: list[tuple[str, str]]
    status_code: int
    service: str
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def events_named(self, name: str) -> list[dict[str, Any]]:
        return [attributes for event, attributes in self.events if event == name]


@dataclass
class Receiver:
    url: str = ""
    spans: list[ReceivedSpan] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def named(self, prefix: str) -> list[ReceivedSpan]:
        with self.lock:
            return [s for s in self.spans if s.name.startswith(prefix)]

    def clear(self) -> None:
        with self.lock:
            self.spans.clear()

    def children(self, parent: ReceivedSpan) -> list[ReceivedSpan]:
        with self.lock:
            return [s for s in self.spans if s.parent_id == parent.span_id]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    receiver = Receiver()

    async def traces(request: Request) -> Response:
        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.body())
        for resource_spans in export.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    received = ReceivedSpan(
                        name=s.name,
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_id=s.parent_span_id.hex(),
                        kind=s.kind,
                        attributes={a.key: _value(a.value) for a in s.attributes},
                        links=[(link.trace_id.hex(), link.span_id.hex()) for link in s.links],
                        status_code=s.status.code,
                        service=str(resource.get("service.name")),
                        events=[
                            (e.name, {a.key: _value(a.value) for a in e.attributes})
                            for e in s.events
                        ],
                    )
                    with receiver.lock:
                        receiver.spans.append(received)
        return Response(
            ExportTraceServiceResponse().SerializeToString(),
            media_type="application/x-protobuf",
        )

    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
    with serve_in_thread(app, name="otlp-receiver") as root:
        receiver.url = root
        yield receiver
