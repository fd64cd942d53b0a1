"""One request to the endpoint each: a completion, a stream of deltas, a batch of embeddings.

Every ``openai`` exception met here leaves as a :class:`liz.errors.LLMError`, with
the provider's ``Retry-After`` on ``retry_after`` when it sent one.

Requests go through the SDK's ``post`` (its documented way to send a body as given)
rather than ``chat.completions.create`` and ``embeddings.create``: those walk every
message through each type of the SDK's message unions before sending, to rename
fields our plain dicts never have. That walk was a seventh of a turn's CPU time
under load. The SDK still sends, retries, authenticates, parses and raises as ever.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import openai
from openai import AsyncOpenAI, AsyncStream
from openai.types import CreateEmbeddingResponse, Embedding
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from liz.llm.errors import LLMOutputError, translate_openai_error
from liz.trace import record_llm_call

log = logging.getLogger(__name__)


async def complete(
    client: AsyncOpenAI,
    model: str,
    messages: list[dict[str, Any]],
    *,
    temperature: float | None = None,
    response_format: dict[str, Any] | None = None,
) -> ChatCompletion:
    """One chat completion, whole."""
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": False}
    if temperature is not None:
        body["temperature"] = temperature
    if response_format is not None:
        body["response_format"] = response_format
    log.debug("chat completion: model %s, %d messages", model, len(messages))
    record_llm_call(model, messages, streamed=False, response_format=response_format)
    try:
        completion = await client.post("/chat/completions", body=body, cast_to=ChatCompletion)
    except openai.OpenAIError as exc:
        raise translate_openai_error(exc, model=model) from exc
    return completion


async def stream_deltas(
    client: AsyncOpenAI,
    model: str,
    messages: list[dict[str, Any]],
    *,
    temperature: float | None = None,
) -> AsyncIterator[str]:
    """One chat completion, streamed: its text deltas as they arrive."""
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
    if temperature is not None:
        body["temperature"] = temperature
    record_llm_call(model, messages, streamed=True)
    try:
        chunks = await client.post(
            "/chat/completions",
            body=body,
            cast_to=ChatCompletion,
            stream=True,
            stream_cls=AsyncStream[ChatCompletionChunk],
        )
    except openai.OpenAIError as exc:
        raise translate_openai_error(exc, model=model) from exc
    try:
        async for chunk in chunks:
            for choice in chunk.choices:
                if choice.delta.content:
                    yield choice.delta.content
    except openai.OpenAIError as exc:
        raise translate_openai_error(exc, model=model) from exc
    finally:
        await chunks.close()


async def embed_batch(client: AsyncOpenAI, model: str, texts: list[str]) -> list[list[float]]:
    """One embeddings request: a vector per text, in the order given."""
    return [list(item.embedding) for item in await _embeddings(client, model, texts, "float")]


async def embed_batch_float32(
    client: AsyncOpenAI, model: str, texts: list[str]
) -> list[npt.NDArray[np.float32]]:
    """One embeddings request: a float32 array per text, in the order given.

    Asked for as base64 (four bytes a number, decoded by numpy): a list of floats in
    JSON costs the SDK a Python object per number, most of an embedding's CPU time.
    A provider that ignores the format and answers floats is read as well.
    """
    items = await _embeddings(client, model, texts, "base64")
    return [_float32(item.embedding) for item in items]


async def _embeddings(
    client: AsyncOpenAI, model: str, texts: list[str], encoding: Literal["float", "base64"]
) -> list[Embedding]:
    try:
        response = await client.post(
            "/embeddings",
            body={"model": model, "input": texts, "encoding_format": encoding},
            cast_to=CreateEmbeddingResponse,
        )
    except openai.OpenAIError as exc:
        raise translate_openai_error(exc, model=model) from exc
    ordered = sorted(response.data, key=lambda item: item.index)
    if len(ordered) != len(texts):
        raise LLMOutputError(
            f"the embedding model {model} returned {len(ordered)} vectors for {len(texts)} texts"
        )
    return ordered


def _float32(embedding: object) -> npt.NDArray[np.float32]:
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4").astype(np.float32)
    return np.asarray(embedding, dtype=np.float32)
