"""One LLM call, observed once, as the OpenTelemetry GenAI conventions describe it.

:func:`llm_call` is the one hook around every request to the model. It feeds the turn's
record (``res.trace.llm_calls``, liz.runtime.turn_trace), a client span ``{operation} {model}`` with
the ``gen_ai.*`` attributes and liz's purpose for the call (``liz.llm.purpose``), the
Prometheus counters, and the usage of the unit of work. Message content goes in the span
only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from opentelemetry.trace import Span, SpanKind

from liz.observe import metrics
from liz.observe.tracing import capture_content, span, tracing_on
from liz.observe.usage import CallUsage, metered_agent, record_usage
from liz.runtime.turn_trace import record_llm_call

# The structured answers whose schema names the call's purpose; any other chat is a reply.
_PURPOSE_BY_SCHEMA = {
    "RouteChoice": "route",
    "ExtractedFacts": "extract",
    "ReconcilePlan": "reconcile",
    "ShouldRespond": "decide",
    "BooleanAnswer": "decide",
}

_purpose: ContextVar[str | None] = ContextVar("liz_llm_purpose", default=None)


@contextmanager
def llm_purpose(purpose: str) -> Iterator[None]:
    """Name the purpose of the LLM calls made inside the block (your own steps' calls)."""
    token = _purpose.set(purpose)
    try:
        yield
    finally:
        _purpose.reset(token)


def purpose_of(operation: str, response_format: dict[str, Any] | None = None) -> str:
    given = _purpose.get()
    if given is not None:
        return given
    if operation == "embeddings":
        return "embed"
    if response_format is not None:
        name = response_format.get("json_schema", {}).get("name")
        if name in _PURPOSE_BY_SCHEMA:
            return _PURPOSE_BY_SCHEMA[name]
    return "reply"


@dataclass
class LLMCallRecord:
    """What a call learned from its answer; fill it in before the block ends."""

    response_model: str | None = None
    response_id: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    finish_reasons: list[str] = field(default_factory=list)
    output_text: str | None = None

    def read_usage(self, usage: Any) -> None:
        """Take the tokens of an ``openai`` usage object (or its dict), when there is one."""
        if usage is None:
            return
        fields = usage if isinstance(usage, dict) else vars(usage)
        self.input_tokens = int(fields.get("prompt_tokens") or 0)
        self.output_tokens = int(fields.get("completion_tokens") or 0)
        # OpenAI and OpenRouter both say here what the prompt cache served; OpenRouter
        # adds what an Anthropic model wrote to it (cache_write_tokens).
        details = fields.get("prompt_tokens_details") or {}
        if not isinstance(details, dict):
            details = {**vars(details), **(getattr(details, "model_extra", None) or {})}
        self.cached_input_tokens = int(details.get("cached_tokens") or 0)
        self.cache_write_tokens = int(details.get("cache_write_tokens") or 0)


# Hosts whose OpenAI-compatible API the conventions (or common use) name a provider for.
_PROVIDERS = {
    "api.openai.com": "openai",
    "openrouter.ai": "openrouter",
    "api.groq.com": "groq",
    "api.deepseek.com": "deepseek",
    "api.mistral.ai": "mistral_ai",
    "api.x.ai": "x_ai",
    "api.perplexity.ai": "perplexity",
    "api.anthropic.com": "anthropic",
    "generativelanguage.googleapis.com": "gcp.gemini",
}
_PROVIDER_SUFFIXES = {".openai.azure.com": "azure.ai.openai"}
_OLLAMA_PORT = 11434


@lru_cache(maxsize=64)
def provider_name(host: str | None, port: int | None) -> str:
    """``gen_ai.provider.name`` for the endpoint ``OPENAI_BASE_URL`` points at: a known
    host's provider, ``ollama`` on its port, else the host itself."""
    if not host:
        return "openai"  # the SDK's default endpoint
    if host in _PROVIDERS:
        return _PROVIDERS[host]
    for suffix, provider in _PROVIDER_SUFFIXES.items():
        if host.endswith(suffix):
            return provider
    if port == _OLLAMA_PORT:
        return "ollama"
    return host


@contextmanager
def llm_call(
    operation: str,
    model: str,
    *,
    messages: Sequence[dict[str, Any]] | None = None,
    response_format: dict[str, Any] | None = None,
    streamed: bool = False,
    server: tuple[str | None, int | None] = (None, None),
) -> Iterator[LLMCallRecord]:
    """Observe one request to the model; the record is read when the block ends."""
    if operation == "chat" and messages is not None:
        record_llm_call(model, messages, streamed=streamed, response_format=response_format)
    purpose = purpose_of(operation, response_format)
    record = LLMCallRecord()
    attributes: dict[str, Any] | None = None
    host, port = server
    if tracing_on():
        attributes = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": provider_name(host, port),
            "gen_ai.request.model": model,
            "liz.llm.purpose": purpose,
        }
        if host:
            attributes["server.address"] = host
        if port:
            attributes["server.port"] = port
        if streamed:
            attributes["gen_ai.request.stream"] = True
    with span(f"{operation} {model}", attributes, kind=SpanKind.CLIENT) as given:
        current = given if given is not None and given.is_recording() else None
        if current is not None and messages is not None and capture_content():
            current.set_attribute("gen_ai.input.messages", json.dumps(list(messages)))
        try:
            yield record
        finally:
            _finish(current, operation, model, purpose, record)


def _finish(
    current: Span | None, operation: str, model: str, purpose: str, record: LLMCallRecord
) -> None:
    response_model = record.response_model or model
    call = CallUsage(
        operation,
        response_model,
        purpose,
        record.input_tokens,
        record.output_tokens,
        cached_input_tokens=record.cached_input_tokens,
        cache_write_tokens=record.cache_write_tokens,
    )
    metrics.llm_call(call, agent=metered_agent())
    record_usage(call)
    if current is None:
        return
    attributes: dict[str, Any] = {
        "gen_ai.response.model": response_model,
        "gen_ai.usage.input_tokens": record.input_tokens,  # the cached ones included
        "gen_ai.usage.output_tokens": record.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": record.cached_input_tokens,
    }
    if record.cache_write_tokens:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = record.cache_write_tokens
    if record.response_id:
        attributes["gen_ai.response.id"] = record.response_id
    if record.finish_reasons:
        attributes["gen_ai.response.finish_reasons"] = record.finish_reasons
    if record.output_text is not None and capture_content():
        output = [{"role": "assistant", "content": record.output_text}]
        attributes["gen_ai.output.messages"] = json.dumps(output)
    current.set_attributes(attributes)
