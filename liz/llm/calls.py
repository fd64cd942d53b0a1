"""One request to the endpoint each: a completion, a stream of deltas, a batch of embeddings.

Every ``openai`` exception met here leaves as a :class:`liz.errors.LLMError`, with
the provider's ``Retry-After`` on ``retry_after`` when it sent one.

Requests go through the SDK's ``post`` (its documented way to send a body as given)
rather than ``chat.completions.create`` and ``embeddings.create``: those walk every
message through each type of the SDK's message unions before sending, to rename
fields our plain dicts never have. That walk was a seventh of a turn's CPU time
under load. The SDK still sends, retries, authenticates and raises as ever, and parses
chat answers; embeddings answers are read by :mod:`liz.llm.embedding_answers`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import openai
from openai import AsyncOpenAI, AsyncStream
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from liz.llm.embedding_answers import Vector, read_embeddings
from liz.llm.errors import translate_openai_error
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
    return [vector.tolist() for vector in await _embeddings(client, model, texts, "float")]


async def embed_batch_float32(
    client: AsyncOpenAI, model: str, texts: list[str]
) -> list[npt.NDArray[np.float32]]:
    """One embeddings request: a float32 array per text, in the order given.

    Asked for as base64 (four bytes a number, decoded by numpy): a list of floats in
    JSON costs a Python object per number, most of an embedding's CPU time. A
    provider that ignores the format and answers floats is read as well.
    """
    vectors = await _embeddings(client, model, texts, "base64")
    return [vector.astype(np.float32, copy=False) for vector in vectors]


async def _embeddings(
    client: AsyncOpenAI, model: str, texts: list[str], encoding: Literal["float", "base64"]
) -> list[Vector]:
    """The answer is read here (liz.llm.embedding_answers), not by the SDK: checked, and
    in a quarter less CPU."""
    try:
        response = await client.post(
            "/embeddings",
            body={"model": model, "input": texts, "encoding_format": encoding},
            cast_to=bytes,  # the body as it came
        )
    except openai.OpenAIError as exc:
        raise translate_openai_error(exc, model=model) from exc
    return read_embeddings(response, model=model, count=len(texts))
