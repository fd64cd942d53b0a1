"""OpenAI's JSON shapes as ScriptedOpenAI writes them: completions, chunks, embeddings, errors.

Each body is built from the openai SDK's own types (``ChatCompletion``,
``ChatCompletionChunk``, ``CreateEmbeddingResponse``), so it is what the SDK describes;
tests/test_openai_wire_contract.py checks that liz reads each as the SDK does.

A chat answer's tokens are estimated as liz budgets them, four bytes of UTF-8 a token,
its cached prompt tokens as a prefix cache would serve them (liz.testing.prompt_cache);
an embeddings request's tokens are its words. No tokenizer download either way. An
embedding is a hashed bag of words, so texts that share words are close.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import re
import struct
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from openai.types import CompletionUsage, CreateEmbeddingResponse, Embedding
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
)
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice
from openai.types.chat.chat_completion_chunk import (
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChoiceDeltaToolCallFunction,
)
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.completion_usage import PromptTokensDetails
from openai.types.create_embedding_response import Usage as EmbeddingUsage
from pydantic import BaseModel
from starlette.responses import JSONResponse

from liz.prompts.tokens import estimate_tokens
from liz.testing.openai_requests import Answer, ToolCalls

_WORD = re.compile(r"\w+")
_STREAM_PIECE = re.compile(r"\s*\S+|\s+$")
FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "function_call"]


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def scripted_embedding(text: str, dimensions: int = 64) -> list[float]:
    """The vector ScriptedOpenAI gives ``text``: hashed word counts, scaled to unit length.

    Counts are never negative, so a hash collision can only raise the cosine of two
    texts: texts sharing words are at least as similar as their shared words make them.
    """
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest, "big") % dimensions] += 1.0
    norm = math.sqrt(sum(value * value for value in vector))
    if norm == 0.0:
        # No words at all: a fixed unit vector keeps cosine similarity defined.
        return [1.0] + [0.0] * (dimensions - 1)
    return [value / norm for value in vector]


def embeddings_body(
    texts: list[str], model: str, dimensions: int, *, as_base64: bool
) -> dict[str, Any]:
    """The answer to an embeddings request for ``texts``."""
    tokens = sum(word_count(text) for text in texts)
    answer = CreateEmbeddingResponse(
        object="list",
        data=[
            Embedding(
                object="embedding", index=index, embedding=scripted_embedding(text, dimensions)
            )
            for index, text in enumerate(texts)
        ],
        model=model,
        usage=EmbeddingUsage(prompt_tokens=tokens, total_tokens=tokens),
    )
    body = wire(answer)
    if as_base64:
        # The SDK's type describes the float form; base64 packs the same numbers.
        for item in body["data"]:
            vector = item["embedding"]
            item["embedding"] = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
    return body


def wire(answer: BaseModel) -> dict[str, Any]:
    """One of the SDK's types as the JSON the API sends: every field that was set."""
    return answer.model_dump(mode="json", exclude_unset=True)


def as_content(answer: Answer) -> str:
    """A scripted answer as the message text: JSON for anything but a string."""
    if isinstance(answer, str):
        return answer
    if isinstance(answer, ToolCalls):
        return answer.text
    if isinstance(answer, BaseModel):
        return answer.model_dump_json()
    return json.dumps(answer)


def usage(prompt_tokens: int, cached_tokens: int, content: str) -> CompletionUsage:
    """A chat answer's usage: tokens as liz estimates them (liz.testing.prompt_cache)."""
    completion_tokens = estimate_tokens(content)
    return CompletionUsage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=cached_tokens),
    )


def tool_call_items(
    completion_id: str, answer: ToolCalls
) -> list[ChatCompletionMessageFunctionToolCall]:
    """The answer's calls as the API's ``tool_calls`` list, with ids unique to the answer."""
    return [
        ChatCompletionMessageFunctionToolCall(
            id=f"call_{completion_id.rsplit('-', 1)[-1]}_{index}",
            type="function",
            function=Function(name=call.name, arguments=call.arguments_text),
        )
        for index, call in enumerate(answer.calls)
    ]


def completion_body(
    completion_id: str,
    model: str,
    content: str,
    token_usage: CompletionUsage,
    tool_calls: list[ChatCompletionMessageFunctionToolCall] | None = None,
) -> dict[str, Any]:
    """A whole (non-streamed) chat completion answering ``content`` (and ``tool_calls``)."""
    message = ChatCompletionMessage(role="assistant", content=content, refusal=None)
    finish: Literal["stop", "tool_calls"] = "stop"
    if tool_calls:
        message = ChatCompletionMessage(
            role="assistant", content=content or None, refusal=None, tool_calls=list(tool_calls)
        )
        finish = "tool_calls"
    answer = ChatCompletion(
        id=completion_id,
        object="chat.completion",
        created=int(time.time()),
        model=model,
        choices=[Choice(index=0, message=message, logprobs=None, finish_reason=finish)],
        usage=token_usage,
    )
    return wire(answer)


def chunk(
    completion_id: str,
    model: str,
    choices: list[ChunkChoice],
    token_usage: CompletionUsage | None = None,
) -> ChatCompletionChunk:
    return ChatCompletionChunk(
        id=completion_id,
        object="chat.completion.chunk",
        created=int(time.time()),
        model=model,
        choices=choices,
        usage=token_usage,
    )


def stream_chunks(
    completion_id: str,
    model: str,
    content: str,
    tool_calls: list[ChatCompletionMessageFunctionToolCall] | None = None,
) -> list[ChatCompletionChunk]:
    """OpenAI's chunk sequence: the role, one chunk per word, each tool call in pieces
    (its id and name, then its arguments in two halves), then the finish reason."""

    def choice(delta: ChoiceDelta, finish_reason: FinishReason | None = None) -> ChunkChoice:
        return ChunkChoice(index=0, delta=delta, logprobs=None, finish_reason=finish_reason)

    deltas = [ChoiceDelta(role="assistant", content="")]
    deltas += [ChoiceDelta(content=piece) for piece in _STREAM_PIECE.findall(content)]
    for index, call in enumerate(tool_calls or []):
        arguments = call.function.arguments
        half = len(arguments) // 2
        head = ChoiceDeltaToolCallFunction(name=call.function.name, arguments="")
        deltas.append(
            ChoiceDelta(
                tool_calls=[
                    ChoiceDeltaToolCall(index=index, id=call.id, type="function", function=head)
                ]
            )
        )
        for piece in (arguments[:half], arguments[half:]):
            part = ChoiceDeltaToolCallFunction(arguments=piece)
            deltas.append(ChoiceDelta(tool_calls=[ChoiceDeltaToolCall(index=index, function=part)]))
    chunks = [chunk(completion_id, model, [choice(delta)]) for delta in deltas]
    finish: FinishReason = "tool_calls" if tool_calls else "stop"
    chunks.append(chunk(completion_id, model, [choice(ChoiceDelta(), finish)]))
    return chunks


async def server_sent_events(
    chunks: list[ChatCompletionChunk], *, pause: float = 0.0
) -> AsyncIterator[str]:
    for item in chunks:
        yield f"data: {json.dumps(wire(item))}\n\n"
        if pause:
            await asyncio.sleep(pause)
    yield "data: [DONE]\n\n"


def error_response(
    status: int,
    message: str,
    retry_after: float | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """OpenAI's error body with ``status``; ``retry_after`` becomes the ``Retry-After`` header."""
    kind = "invalid_request_error"
    if status == 429:
        kind = "rate_limit_exceeded"
    elif status >= 500:
        kind = "server_error"
    headers = dict(headers or {})
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return JSONResponse(body, status_code=status, headers=headers)
