"""The LLM boundary: liz's own path against the openai SDK's typed calls, CPU a turn.

    .venv/bin/python bench/llm_boundary.py                    # 8 rounds of 200 turns each way
    .venv/bin/python bench/llm_boundary.py --rounds 3 --turns 50   # quick

The scripted server runs in a process of its own (bench/scripted_server.py), so only
the client's work is counted. One client (liz's, as settings make it) sends every way;
the ways take turns in every round. The prompt is shaped as liz's: a system message, a
user message of about 4 KB of context, three tools offered. Each pair is the same job,
observed the same way (liz.observe.genai.llm_call):

- plain turn, one whole chat answer: liz's ``complete`` (``client.post``, the answer read
  by liz.llm.calls) against ``client.chat.completions.create``;
- tool turn, two whole answers (a call, then the reply to its result);
- tool turn, streamed: liz's ``tool_step`` with ``on_text`` (``client.post`` with the SDK's
  chunk stream) against ``create(stream=True)`` iterated, and against the SDK's
  ``chat.completions.stream`` helper, which puts the calls back together itself;
- embeddings, 8 texts as float32: ``client.post`` read by liz.llm.calls,
  against ``client.embeddings.create(encoding_format="base64")`` decoded by numpy.

Printed: the median over the rounds of CPU ms a turn, and the typed way's CPU over
liz's, as a ratio and in ms (the issue's threshold: 0.5 ms a turn).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from benchkit import markdown_table
from memory import measured_client
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion
from scripted_server import scripted_server

from liz.llm.calls import (
    ChatAnswer,
    RequestedCall,
    ToolStep,
    complete,
    embed_batch_float32,
    read_chunk,
    read_completion,
    sent_messages,
    server,
    tool_step,
)
from liz.observe.genai import llm_call

Way = Callable[[], Awaitable[object]]
MODEL = "scripted-large"
SYSTEM = "You are Bench, a helpful assistant. " * 40
CONTEXT = (
    "<AGENT_CONTEXT>"
    + "Bench answers questions about the weather, trains and opening hours. " * 60
    + "</AGENT_CONTEXT>\n<CURRENT_USER_INPUT>What is the weather in Oslo?</CURRENT_USER_INPUT>"
)
TEXTS = [f"User's friend number {n} lives in Oslo and likes long walks" for n in range(8)]


def tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} for a city, as the service knows it today.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city's name."}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }


TOOLS = [tool("weather"), tool("trains"), tool("opening_hours")]


def prompt() -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": CONTEXT}]


def answer_of(completion: ChatCompletion) -> ChatAnswer:
    """A typed completion as liz's ChatAnswer (what the typed path would hand on)."""
    message = completion.choices[0].message if completion.choices else None
    calls = [
        RequestedCall(call.id, call.function.name, call.function.arguments)
        for call in (message.tool_calls or [] if message else [])
        if call.type == "function"
    ]
    return ChatAnswer(
        text=(message.content if message else None) or "",
        refusal=message.refusal if message else None,
        calls=calls,
        id=completion.id,
        model=completion.model,
        finish_reasons=[c.finish_reason for c in completion.choices if c.finish_reason],
        usage=completion.usage.model_dump() if completion.usage else None,
    )


async def typed_complete(
    client: AsyncOpenAI, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> ChatAnswer:
    with llm_call("chat", MODEL, messages=messages, server=server(client)) as record:
        completion = await client.chat.completions.create(
            model=MODEL,
            messages=sent_messages(client, MODEL, messages),  # type: ignore[arg-type]
            tools=tools,  # type: ignore[arg-type]
        )
        answer = answer_of(completion)
        read_completion(record, answer)
    return answer


async def typed_streamed(
    client: AsyncOpenAI, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> ToolStep:
    with llm_call("chat", MODEL, messages=messages, streamed=True, server=server(client)) as rec:
        chunks = await client.chat.completions.create(  # type: ignore[call-overload]
            model=MODEL,
            messages=sent_messages(client, MODEL, messages),
            tools=tools,
            stream=True,
            stream_options={"include_usage": True},
        )
        text: list[str] = []
        pieces: dict[int, dict[str, str]] = {}
        async for chunk in chunks:
            read_chunk(rec, chunk)
            for choice in chunk.choices:
                if choice.delta.content:
                    text.append(choice.delta.content)
                for part in choice.delta.tool_calls or []:
                    call = pieces.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                    call["id"] = part.id or call["id"]
                    if part.function is not None:
                        call["name"] += part.function.name or ""
                        call["arguments"] += part.function.arguments or ""
        rec.output_text = "".join(text)
    calls = [RequestedCall(c["id"], c["name"], c["arguments"]) for _, c in sorted(pieces.items())]
    return ToolStep("".join(text), calls)


async def helper_streamed(
    client: AsyncOpenAI, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> ToolStep:
    with llm_call("chat", MODEL, messages=messages, streamed=True, server=server(client)) as rec:
        async with client.chat.completions.stream(
            model=MODEL,
            messages=sent_messages(client, MODEL, messages),  # type: ignore[arg-type]
            tools=tools,  # type: ignore[arg-type]
            stream_options={"include_usage": True},
        ) as stream:
            async for event in stream:
                if event.type == "chunk":
                    read_chunk(rec, event.chunk)
            final = await stream.get_final_completion()
        message = final.choices[0].message
        rec.output_text = message.content or ""
    calls = [
        RequestedCall(c.id, c.function.name, c.function.arguments)
        for c in message.tool_calls or []
        if c.type == "function"
    ]
    return ToolStep(message.content or "", calls)


async def typed_float32(client: AsyncOpenAI, texts: list[str]) -> list[npt.NDArray[np.float32]]:
    with llm_call("embeddings", "scripted-embedding", server=server(client)) as record:
        answer = await client.embeddings.create(
            model="scripted-embedding", input=texts, encoding_format="base64"
        )
        record.response_model = answer.model
        record.input_tokens = answer.usage.prompt_tokens
    ordered = sorted(answer.data, key=lambda item: item.index)
    return [np.frombuffer(base64.b64decode(str(item.embedding)), dtype="<f4") for item in ordered]


Step = Callable[[AsyncOpenAI, list[dict[str, Any]], list[dict[str, Any]]], Awaitable[Any]]


def tool_turn(client: AsyncOpenAI, step: Step) -> Way:
    """A turn with one tool call: ask offering the tools, run the call, ask again."""

    async def turn() -> object:
        messages = prompt()
        first = await step(client, messages, TOOLS)
        if not first.calls:
            raise RuntimeError("the scripted model called no tool")
        messages.append(ToolStep(first.text, first.calls).assistant_message())
        for call in first.calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": '{"sky":"clear"}'})
        second = await step(client, messages, TOOLS)
        return second.text

    return turn


async def liz_whole(client: AsyncOpenAI, messages: Any, tools: Any) -> ToolStep:
    return await tool_step(client, MODEL, messages, tools)


async def liz_streamed(client: AsyncOpenAI, messages: Any, tools: Any) -> ToolStep:
    async def sink(_: str) -> None:
        pass

    return await tool_step(client, MODEL, messages, tools, on_text=sink)


async def measure(base_url: str, rounds: int, turns: int) -> list[list[str]]:
    llm = measured_client(base_url)
    client = llm.openai

    async def liz_plain() -> object:
        return (await complete(client, MODEL, prompt())).text

    async def typed_plain() -> object:
        return (await typed_complete(client, prompt(), [])).text

    async def liz_embed() -> object:
        return await embed_batch_float32(client, "scripted-embedding", TEXTS)

    async def typed_embed() -> object:
        return await typed_float32(client, TEXTS)

    pairs: dict[str, tuple[Way, dict[str, Way]]] = {
        "plain turn, one whole answer": (liz_plain, {"create": typed_plain}),
        "tool turn, two whole answers": (
            tool_turn(client, liz_whole),
            {"create": tool_turn(client, typed_complete)},
        ),
        "tool turn, two streamed answers": (
            tool_turn(client, liz_streamed),
            {
                "create(stream=True)": tool_turn(client, typed_streamed),
                "stream() helper": tool_turn(client, helper_streamed),
            },
        ),
        "embeddings, 8 texts as float32": (liz_embed, {"embeddings.create": typed_embed}),
    }
    ways: dict[tuple[str, str], Way] = {}
    for job, (ours, typed) in pairs.items():
        ways[(job, "liz")] = ours
        for name, way in typed.items():
            ways[(job, name)] = way
    for way in ways.values():  # warm up: connections, caches, the first imports
        for _ in range(10):
            await way()
    cpu: dict[tuple[str, str], list[float]] = {key: [] for key in ways}
    for _ in range(rounds):
        for key, way in ways.items():
            started = time.process_time()
            for _ in range(turns):
                await way()
            cpu[key].append((time.process_time() - started) / turns * 1000)
    await llm.close()
    rows = []
    for job, (_, typed) in pairs.items():
        base = statistics.median(cpu[(job, "liz")])
        rows.append([job, "liz (client.post)", f"{base:.3f}", "1.00", ""])
        for name in typed:
            theirs = statistics.median(cpu[(job, name)])
            rows.append(
                [
                    job,
                    f"SDK {name}",
                    f"{theirs:.3f}",
                    f"{theirs / base:.2f}",
                    f"{theirs - base:+.3f}",
                ]
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    with scripted_server() as base_url:
        rows = asyncio.run(measure(base_url, args.rounds, args.turns))
    print(f"CPU a turn, client side, medians of {args.rounds} rounds of {args.turns} turns:")
    header = ["job", "way", "CPU ms/turn", "ratio to liz", "ms over liz"]
    print(markdown_table(header, rows))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
