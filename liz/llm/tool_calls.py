"""One chat request that offers tools: the answer's text and the calls the model asked for.

Streamed answers give their text deltas to ``on_text`` as they come, and their calls,
which arrive in pieces, put back together.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import openai
from openai import AsyncOpenAI, AsyncStream
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from liz.llm.calls import post_chat, read_chunk, read_completion, sent_messages, server
from liz.llm.chat_answers import RequestedCall
from liz.llm.errors import translate_openai_error
from liz.observe.genai import LLMCallRecord, llm_call

TextSink = Callable[[str], Awaitable[None]]


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
        try:
            chunks = await client.post(
                "/chat/completions",
                body=body,
                cast_to=ChatCompletion,
                stream=True,
                stream_cls=AsyncStream[ChatCompletionChunk],
            )
            try:
                step = await _streamed(chunks, on_text, record)
                record.output_text = step.text
                return step
            finally:
                await chunks.close()
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
