"""One request to the endpoint each: a completion, a stream of deltas, a batch of embeddings.

Every ``openai`` exception met here leaves as a :class:`liz.errors.LLMError`, with
the provider's ``Retry-After`` on ``retry_after`` when it sent one.

Requests go through the SDK's ``post`` (its documented way to send a body as given)
rather than ``chat.completions.create`` and ``embeddings.create``: those walk every
message through each type of the SDK's message unions before sending, to rename
fields our plain dicts never have. That walk was a seventh of a turn's CPU time
under load. The SDK still sends, retries, authenticates and raises as ever, and parses
streamed chunks; whole chat answers are read by :mod:`liz.llm.chat_answers`, embeddings
answers by :mod:`liz.llm.embedding_answers`.
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

from liz.llm.cache_marks import marks_cache, with_cache_mark
from liz.llm.chat_answers import ChatAnswer, read_chat_answer
from liz.llm.embedding_answers import Vector, read_embeddings_answer
from liz.llm.errors import translate_openai_error
from liz.observe.genai import LLMCallRecord, llm_call

log = logging.getLogger(__name__)


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
