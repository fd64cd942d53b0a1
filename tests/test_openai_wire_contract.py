"""The contract behind liz's own reading of the OpenAI API (liz.llm.calls).

Every answer and chunk the scripted model sends must validate as the openai SDK's own
types, and liz must read from it what the SDK reads. When an SDK release changes those
types, this fails here, naming the body, before users' turns do.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import numpy as np
import pytest
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic import ValidationError

from liz.llm.calls import read_chat_answer, read_embeddings_answer
from liz.testing.openai_requests import Answer
from liz.testing.openai_server import ScriptedOpenAI, call_tool, call_tools
from liz.testing.scripted_model import scripted_model

pytestmark = pytest.mark.anyio

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
        },
    }
    for name in ("order_status", "refund")
]
ANSWERS: dict[str, Answer] = {
    "text": "Hello there, how are you?",
    "empty text": "",
    "JSON": {"value": True, "explanation": "it rains"},
    "one call": call_tool("order_status", {"id": "A1"}),
    "two calls and text": call_tools(
        ("order_status", {"id": "A1"}), ("refund", {"id": "B2"}), text="Checking."
    ),
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def validated(kind: type[Any], raw: bytes | str, what: str) -> Any:
    try:
        return kind.model_validate_json(raw)
    except ValidationError as exc:
        pytest.fail(
            f"the openai SDK's {kind.__name__} no longer describes what {what} sends; "
            f"liz.llm.calls reads this wire itself and must be checked against the new "
            f"release:\n{exc}\nbody: {str(raw)[:400]}"
        )


async def post(server: ScriptedOpenAI, path: str, body: dict[str, Any]) -> httpx.Response:
    transport = httpx.ASGITransport(app=server.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://scripted") as client:
        answer = await client.post(f"/v1{path}", json=body)
    assert answer.status_code == 200, answer.text
    return answer


def chat_body(messages: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {"model": "scripted-large", "tools": TOOLS, "messages": messages, **more}


def chunks_of(response: httpx.Response, what: str) -> list[ChatCompletionChunk]:
    events = [line[6:] for line in response.text.split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]", f"{what} did not end its stream with [DONE]"
    return [validated(ChatCompletionChunk, event, what) for event in events[:-1]]


def reassembled(chunks: list[ChatCompletionChunk]) -> tuple[str, list[tuple[str, str, str]]]:
    """The text and calls (id, name, arguments) of a stream, put together from the SDK's types."""
    text, calls = "", dict[int, list[str]]()
    for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for part in choice.delta.tool_calls or []:
                call = calls.setdefault(part.index, ["", "", ""])
                call[0] += part.id or ""
                call[1] += (part.function.name or "") if part.function else ""
                call[2] += (part.function.arguments or "") if part.function else ""
    return text, [(c[0], c[1], c[2]) for _, c in sorted(calls.items())]


def sdk_reading(completion: ChatCompletion) -> tuple[str, list[tuple[str, str, str]]]:
    message = completion.choices[0].message
    calls = [
        (call.id, call.function.name, call.function.arguments)
        for call in message.tool_calls or []
        if call.type == "function"
    ]
    return message.content or "", calls


@pytest.mark.parametrize("name", list(ANSWERS))
async def test_a_whole_answer_is_the_sdks_chat_completion_and_liz_reads_it_as_the_sdk(
    name: str,
) -> None:
    server = ScriptedOpenAI()
    server.reply(ANSWERS[name])
    server.report_cached_tokens(3)
    raw = await post(server, "/chat/completions", chat_body([{"role": "user", "content": "hi"}]))
    completion = validated(ChatCompletion, raw.content, f"a whole answer ({name})")

    ours = read_chat_answer(raw.content, model="scripted-large")

    assert (ours.text, [(c.id, c.name, c.arguments) for c in ours.calls]) == sdk_reading(completion)
    assert (ours.id, ours.model) == (completion.id, completion.model)
    assert ours.finish_reasons == [c.finish_reason for c in completion.choices]
    assert completion.usage is not None and ours.usage == completion.usage.model_dump(
        exclude_unset=True
    )
    assert completion.usage.prompt_tokens_details is not None
    assert completion.usage.prompt_tokens_details.cached_tokens == 3


@pytest.mark.parametrize("name", list(ANSWERS))
@pytest.mark.parametrize("include_usage", [True, False])
async def test_every_chunk_is_the_sdks_chunk_and_the_stream_adds_up_to_the_whole_answer(
    name: str, include_usage: bool
) -> None:
    server = ScriptedOpenAI()
    server.reply(ANSWERS[name], ANSWERS[name])
    messages = [{"role": "user", "content": "hi"}]
    options = {"stream_options": {"include_usage": True}} if include_usage else {}
    streamed = await post(server, "/chat/completions", chat_body(messages, stream=True, **options))
    chunks = chunks_of(streamed, f"a streamed answer ({name})")
    whole = await post(server, "/chat/completions", chat_body(messages))
    completion = validated(ChatCompletion, whole.content, f"a whole answer ({name})")

    text, calls = reassembled(chunks)
    whole_text, whole_calls = sdk_reading(completion)
    assert text == whole_text
    # Ids are unique to each answer; the calls' names and arguments are the same.
    assert [call[1:] for call in calls] == [call[1:] for call in whole_calls]
    assert [c.finish_reason for c in chunks[-2 if include_usage else -1].choices] == [
        completion.choices[0].finish_reason
    ]
    usage_chunks = [chunk for chunk in chunks if chunk.usage is not None]
    assert len(usage_chunks) == (1 if include_usage else 0)


async def test_the_scripted_models_replies_calls_and_structured_answers_are_the_sdks() -> None:
    server = scripted_model()
    asked = [{"role": "user", "content": 'call order_status {"id": "A1"}'}]
    called = validated(
        ChatCompletion,
        (await post(server, "/chat/completions", chat_body(asked))).content,
        "the scripted model's tool call",
    )
    call = sdk_reading(called)[1][0]
    assert call[1:] == ("order_status", '{"id": "A1"}')
    answered: list[dict[str, Any]] = [
        *asked,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [called.choices[0].message.tool_calls[0].model_dump()],
        },
        {"role": "tool", "tool_call_id": call[0], "content": "shipped"},
    ]
    for what, body in {
        "the scripted model's reply to a tool result": chat_body(answered),
        "the scripted model's plain reply": chat_body([{"role": "user", "content": "hello"}]),
        "the scripted model's structured answer": {
            "model": "scripted-small",
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "BooleanAnswer", "schema": {}, "strict": True},
            },
            "messages": [{"role": "user", "content": "Is it raining?"}],
        },
    }.items():
        raw = (await post(server, "/chat/completions", body)).content
        text = sdk_reading(validated(ChatCompletion, raw, what))[0]
        assert text.startswith("[scripted reply]") or json.loads(text)["value"] is True
        streamed = await post(server, "/chat/completions", {**body, "stream": True})
        assert reassembled(chunks_of(streamed, what))[0] == text


@pytest.mark.parametrize("encoding", ["float", "base64"])
async def test_an_embeddings_answer_is_the_sdks_and_liz_reads_the_same_vectors(
    encoding: str,
) -> None:
    server = ScriptedOpenAI(embedding_dim=16)
    texts = ["green tea", "black coffee", "green tea again"]
    body = {"model": "scripted-embedding", "input": texts, "encoding_format": encoding}
    raw = (await post(server, "/embeddings", body)).content
    answer = json.loads(raw)
    if encoding == "base64":
        # The SDK's type describes the float form; base64 packs the same numbers.
        for item in answer["data"]:
            packed = base64.b64decode(item["embedding"])
            item["embedding"] = np.frombuffer(packed, dtype="<f4").tolist()
    sdk = validated(
        CreateEmbeddingResponse, json.dumps(answer), f"an embeddings answer ({encoding})"
    )

    ours = read_embeddings_answer(raw, model="scripted-embedding", count=len(texts))

    assert (ours.model, ours.input_tokens) == (sdk.model, sdk.usage.prompt_tokens)
    expected = [item.embedding for item in sorted(sdk.data, key=lambda item: item.index)]
    np.testing.assert_allclose(np.stack(ours.vectors), np.asarray(expected), rtol=1e-6)
