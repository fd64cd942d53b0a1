"""liz's side of the OpenAI-compatible API: the requests it sends and the answers it reads.

This module is the only place that knows the API's JSON. It sends bodies through the
SDK's ``client.post`` (which still sends, retries, authenticates, raises, and parses
streamed chunks into the SDK's own ``ChatCompletionChunk``) and reads whole chat answers
and embeddings answers itself. The SDK's typed calls would put the messages before
the tools in the body, where providers' prompt caches want what repeats first, and
cost more CPU a turn (docs/performance.md, "LLM boundary"). Its readers keep to the
SDK's types: tests/test_openai_wire_contract.py validates every body the scripted model
sends with them, and ``openai`` has an upper bound in pyproject.toml.

Every ``openai`` exception met here leaves as a :class:`liz.errors.LLMError`, with the
provider's ``Retry-After`` on ``retry_after`` when it sent one. An answer that cannot be
read is an :class:`LLMOutputError` naming what came; what a chat answer leaves out is
read as absent (no text, no calls).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import openai
from openai import AsyncOpenAI, AsyncStream
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic_core import from_json

from liz.llm.cache_marks import marks_cache, with_cache_mark
from liz.llm.errors import LLMOutputError, translate_openai_error
from liz.observe.genai import LLMCallRecord, llm_call

log = logging.getLogger(__name__)

TextSink = Callable[[str], Awaitable[None]]
Vector = npt.NDArray[np.float32] | npt.NDArray[np.float64]


# -- chat answers ------------------------------------------------------------


@dataclass(frozen=True)
class RequestedCall:
    """A call the model asked for; ``arguments`` is the JSON text it wrote."""

    id: str
    name: str
    arguments: str

    def to_message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class ChatAnswer:
    """A whole answer: the first choice's text, refusal and calls; what the call's record keeps."""

    text: str = ""
    refusal: str | None = None
    calls: list[RequestedCall] = field(default_factory=list)
    id: str | None = None
    model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    usage: dict[str, Any] | None = None


def read_chat_answer(content: bytes, *, model: str) -> ChatAnswer:
    """The answer in ``content`` (the response body) of a request to ``model``."""
    try:
        answer = from_json(content)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        shown = content[:300].decode("utf-8", "replace")
        raise LLMOutputError(
            f"the model {model} answered with something that is not a JSON object: {shown!r}; "
            "check that OPENAI_BASE_URL is an OpenAI-compatible endpoint",
            output=shown,
        )
    choices = [c for c in _list(answer.get("choices")) if isinstance(c, dict)]
    message = _dict(choices[0].get("message")) if choices else {}
    usage = answer.get("usage")
    return ChatAnswer(
        text=_text(message.get("content")),
        refusal=_text(message.get("refusal")) or None,
        calls=[_call(call) for call in _list(message.get("tool_calls")) if _is_function(call)],
        id=_text(answer.get("id")) or None,
        model=_text(answer.get("model")) or None,
        finish_reasons=[c["finish_reason"] for c in choices if _text(c.get("finish_reason"))],
        usage=usage if isinstance(usage, dict) else None,
    )


def _is_function(call: Any) -> bool:
    return isinstance(call, dict) and call.get("type", "function") == "function"


def _call(call: dict[str, Any]) -> RequestedCall:
    function = _dict(call.get("function"))
    return RequestedCall(
        _text(call.get("id")), _text(function.get("name")), _text(function.get("arguments"))
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# -- requests ---------------------------------------------------------------


async def complete(
    client: AsyncOpenAI,
    model: str,
    messages: list[dict[str, Any]],
    *,
    temperature: float | None = None,
    response_format: dict[str, Any] | None = None,
) -> ChatAnswer:
    """One chat completion, whole."""
    # What is the same on every call (the answer's schema) before the messages, so the
    # body as sent starts with the part a provider's prompt cache can serve.
    body: dict[str, Any] = {"model": model}
    if response_format is not None:
        body["response_format"] = response_format
    body.update(messages=sent_messages(client, model, messages), stream=False)
    if temperature is not None:
        body["temperature"] = temperature
    log.debug("chat completion: model %s, %d messages", model, len(messages))
    with llm_call(
        "chat", model, messages=messages, response_format=response_format, server=server(client)
    ) as record:
        answer = await post_chat(client, model, body)
        read_completion(record, answer)
    return answer


async def post_chat(client: AsyncOpenAI, model: str, body: dict[str, Any]) -> ChatAnswer:
    """Send ``body`` to the chat endpoint; its whole answer, read."""
    try:
        content = await client.post("/chat/completions", body=body, cast_to=bytes)
    except openai.OpenAIError as exc:
        raise translate_openai_error(exc, model=model) from exc
    return read_chat_answer(content, model=model)


def sent_messages(
    client: AsyncOpenAI, model: str, messages: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``messages`` as the request sends them: with the cache breakpoint where the
    endpoint and model need one (liz.llm.cache_marks)."""
    if marks_cache(str(client.base_url), model):
        return with_cache_mark(messages)
    return messages


def server(client: AsyncOpenAI) -> tuple[str | None, int | None]:
    """The endpoint's host and port, for the call's span."""
    url = client.base_url
    return url.host or None, url.port


def read_completion(record: LLMCallRecord, answer: ChatAnswer) -> None:
    """What a whole answer tells the call's record: model, id, usage, finish reasons."""
    record.response_model = answer.model
    record.response_id = answer.id
    record.read_usage(answer.usage)
    record.finish_reasons = list(answer.finish_reasons)
    record.output_text = answer.text or None


def read_chunk(record: LLMCallRecord, chunk: ChatCompletionChunk) -> None:
    """What one streamed chunk tells the call's record (the last carries the usage)."""
    record.response_model = chunk.model or record.response_model
    record.response_id = chunk.id or record.response_id
    if chunk.usage is not None:
        record.read_usage(chunk.usage)
    record.finish_reasons.extend(c.finish_reason for c in chunk.choices if c.finish_reason)


async def stream_deltas(
    client: AsyncOpenAI,
    model: str,
    messages: list[dict[str, Any]],
    *,
    temperature: float | None = None,
) -> AsyncIterator[str]:
    """One chat completion, streamed: its text deltas as they arrive."""
    body: dict[str, Any] = {
        "model": model,
        "messages": sent_messages(client, model, messages),
        "stream": True,
        "stream_options": {"include_usage": True},  # the last chunk carries the usage
    }
    if temperature is not None:
        body["temperature"] = temperature
    with llm_call("chat", model, messages=messages, streamed=True, server=server(client)) as record:
        chunks = await _open_stream(client, model, body)
        text: list[str] = []
        try:
            async for chunk in chunks:
                read_chunk(record, chunk)
                for choice in chunk.choices:
                    if choice.delta.content:
                        text.append(choice.delta.content)
                        yield choice.delta.content
        except openai.OpenAIError as exc:
            raise translate_openai_error(exc, model=model) from exc
        finally:
            record.output_text = "".join(text)
            await chunks.close()


async def embed_batch(client: AsyncOpenAI, model: str, texts: list[str]) -> list[list[float]]:
    """One embeddings request: a vector per text, in the order given."""
    return [vector.tolist() for vector in await _embeddings(client, model, texts, "float")]


async def embed_batch_float32(
    client: AsyncOpenAI, model: str, texts: list[str]
) -> list[npt.NDArray[np.float32]]:
    """One embeddings request: a float32 array per text, in the order given.

    Asked for as base64 (four bytes a number, decoded by numpy), so no Python object is
    made per number. A provider that ignores the format and answers floats is read too.
    """
    vectors = await _embeddings(client, model, texts, "base64")
    return [vector.astype(np.float32, copy=False) for vector in vectors]


async def _embeddings(
    client: AsyncOpenAI, model: str, texts: list[str], encoding: Literal["float", "base64"]
) -> list[Vector]:
    """The answer is read here (:func:`read_embeddings_answer`): checked, and straight
    into numpy."""
    with llm_call("embeddings", model, server=server(client)) as record:
        try:
            response = await client.post(
                "/embeddings",
                body={"model": model, "input": texts, "encoding_format": encoding},
                cast_to=bytes,  # the body as it came
            )
        except openai.OpenAIError as exc:
            raise translate_openai_error(exc, model=model) from exc
        answer = read_embeddings_answer(response, model=model, count=len(texts))
        record.response_model = answer.model
        record.input_tokens = answer.input_tokens
    return answer.vectors


# -- tool steps -------------------------------------------------------------


@dataclass
class ToolStep:
    """The model's answer to one request: text, and the calls it wants made (maybe none)."""

    text: str = ""
    calls: list[RequestedCall] = field(default_factory=list)

    def assistant_message(self) -> dict[str, Any]:
        """The answer as the assistant message the next request repeats."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.calls:
            message["tool_calls"] = [call.to_message() for call in self.calls]
        return message


async def tool_step(
    client: AsyncOpenAI,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    *,
    on_text: TextSink | None = None,
) -> ToolStep:
    """Ask once, offering ``tools``; streamed when ``on_text`` is given."""
    # The tools before the messages: the body as sent starts with what every turn repeats.
    body: dict[str, Any] = {"model": model}
    if tools:
        body["tools"] = tools
    body.update(messages=sent_messages(client, model, messages), stream=on_text is not None)
    if on_text is not None:
        body["stream_options"] = {"include_usage": True}
    streamed = on_text is not None
    with llm_call(
        "chat", model, messages=messages, streamed=streamed, server=server(client)
    ) as record:
        if on_text is None:
            answer = await post_chat(client, model, body)
            read_completion(record, answer)
            return ToolStep(answer.text, answer.calls)
        chunks = await _open_stream(client, model, body)
        try:
            step = await _streamed(chunks, on_text, record)
        except openai.OpenAIError as exc:
            raise translate_openai_error(exc, model=model) from exc
        finally:
            await chunks.close()
        record.output_text = step.text
        return step


async def _open_stream(
    client: AsyncOpenAI, model: str, body: dict[str, Any]
) -> AsyncStream[ChatCompletionChunk]:
    """Send ``body`` to the chat endpoint as a stream; its chunks, to read and close."""
    try:
        return await client.post(
            "/chat/completions",
            body=body,
            cast_to=ChatCompletion,
            stream=True,
            stream_cls=AsyncStream[ChatCompletionChunk],
        )
    except openai.OpenAIError as exc:
        raise translate_openai_error(exc, model=model) from exc


async def _streamed(
    chunks: AsyncStream[ChatCompletionChunk], on_text: TextSink, record: LLMCallRecord
) -> ToolStep:
    text: list[str] = []
    pieces: dict[int, dict[str, str]] = {}  # call index -> id, name, arguments so far
    async for chunk in chunks:
        read_chunk(record, chunk)
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
                await on_text(delta.content)
            for part in delta.tool_calls or []:
                call = pieces.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                if part.id:
                    call["id"] = part.id
                if part.function is not None:
                    call["name"] += part.function.name or ""
                    call["arguments"] += part.function.arguments or ""
    calls = [
        RequestedCall(c["id"] or f"call_{index}", c["name"], c["arguments"])
        for index, c in sorted(pieces.items())
    ]
    return ToolStep("".join(text), calls)


# -- embeddings answers -----------------------------------------------------


@dataclass(frozen=True)
class EmbeddingsAnswer:
    """The vectors, the model that made them and the tokens it counted."""

    vectors: list[Vector]
    model: str
    input_tokens: int


def read_embeddings_answer(content: bytes, *, model: str, count: int) -> EmbeddingsAnswer:
    """The ``count`` vectors of an embeddings answer, in the order of the texts sent (each
    item's ``index``; the items' order when none has one), with its model and usage."""
    shown = content[:300].decode("utf-8", "replace")
    try:
        answer = json.loads(content)
    except ValueError:
        raise LLMOutputError(
            f"the embedding model {model} answered with something that is not JSON: {shown!r}; "
            "check that OPENAI_BASE_URL is an OpenAI-compatible endpoint",
            output=shown,
        ) from None
    items = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise LLMOutputError(
            f"the embedding model {model} answered without a 'data' list of embeddings: {shown!r}",
            output=shown,
        )
    if len(items) != count:
        raise LLMOutputError(
            f"the embedding model {model} returned {len(items)} vectors for {count} texts",
            output=shown,
        )
    vectors: list[Vector | None] = [None] * count
    for position, item in enumerate(items):
        index = item.get("index", position) if isinstance(item, dict) else position
        if not isinstance(index, int) or not 0 <= index < count or vectors[index] is not None:
            raise LLMOutputError(
                f"the embedding model {model} numbered its vectors wrong: item {position} has "
                f"index {index!r}, for {count} texts",
                output=shown,
            )
        embedding = item.get("embedding") if isinstance(item, dict) else None
        vectors[index] = _vector(embedding, model=model, index=index, shown=shown)
    found = [vector for vector in vectors if vector is not None]
    sizes = sorted({vector.size for vector in found})
    if len(sizes) > 1:
        raise LLMOutputError(
            f"the embedding model {model} returned vectors of different lengths "
            f"({', '.join(map(str, sizes))}) in one answer",
            output=shown,
        )
    usage = answer.get("usage")
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    answered_by = answer.get("model")
    return EmbeddingsAnswer(
        found,
        answered_by if isinstance(answered_by, str) and answered_by else model,
        tokens if isinstance(tokens, int) else 0,
    )


def _vector(embedding: Any, *, model: str, index: int, shown: str) -> Vector:
    vector: Vector | None = None
    if isinstance(embedding, str):
        try:
            raw = base64.b64decode(embedding, validate=True)
        except binascii.Error:
            raw = b""
        if raw and len(raw) % 4 == 0:
            vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    elif isinstance(embedding, list) and all(
        isinstance(number, int | float) and not isinstance(number, bool) for number in embedding
    ):
        vector = np.asarray(embedding, dtype=np.float64)
    if vector is None or vector.size == 0:
        raise LLMOutputError(
            f"the embedding model {model} returned no usable vector for text {index}: expected "
            "a non-empty list of numbers or base64 of float32 numbers",
            output=shown,
        )
    if not np.isfinite(vector).all():
        raise LLMOutputError(
            f"the embedding model {model} returned a vector holding NaN or infinity for text "
            f"{index}",
            output=shown,
        )
    return vector
