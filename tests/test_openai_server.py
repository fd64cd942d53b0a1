"""ScriptedOpenAI speaks OpenAI's wire format well enough for the real SDK (in-process, HTTP)."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import openai
import pytest
from pydantic import BaseModel

from liz.testing.openai_server import NO_ANSWER, ScriptedError, ScriptedOpenAI, scripted_embedding

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Weather(BaseModel):
    city: str
    sunny: bool


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


async def test_chat_completion_is_well_formed_and_echoes_the_model(scripted):
    scripted.reply("Bonjour")
    async with scripted.openai_client() as client:
        completion = await client.chat.completions.create(model="my-model", messages=user("Hi"))

    assert completion.model == "my-model"
    assert completion.id.startswith("chatcmpl-")
    assert completion.choices[0].message.content == "Bonjour"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.completion_tokens == 2  # 7 bytes, 4 a token
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + 2


async def test_answers_are_used_in_order_then_the_responder_decides(scripted):
    scripted.reply("first", {"n": 2}, Weather(city="Oslo", sunny=False))
    scripted.respond_with(lambda request: f"echo: {request.messages[-1]['content']}")
    async with scripted.openai_client() as client:
        answers = [
            (await client.chat.completions.create(model="m", messages=user(f"q{n}")))
            .choices[0]
            .message.content
            for n in range(4)
        ]

    assert answers == ["first", '{"n": 2}', '{"city":"Oslo","sunny":false}', "echo: q3"]
    assert scripted.pending_answers == 0


async def test_an_async_responder_sees_the_schema_name(scripted):
    async def by_schema(request):
        return {"city": "Rome", "sunny": True} if request.schema_name == "Weather" else "plain"

    scripted.respond_with(by_schema)
    async with scripted.openai_client() as client:
        parsed = await client.chat.completions.parse(
            model="m", messages=user("weather?"), response_format=Weather
        )

    assert parsed.choices[0].message.parsed == Weather(city="Rome", sunny=True)


async def test_without_an_answer_the_request_fails_once_saying_how_to_fix_it(scripted):
    async with scripted.openai_client(max_retries=2) as client:
        with pytest.raises(openai.InternalServerError, match=re.escape(NO_ANSWER)):
            await client.chat.completions.create(model="m", messages=user("Hi"))

    assert len(scripted.chat_requests) == 1


async def test_a_scripted_error_fails_one_request_in_openai_error_shape(scripted):
    scripted.reply(ScriptedError(400, "context length exceeded"), "fine")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=scripted.app), base_url="http://scripted"
    ) as http:
        failed = await http.post("/v1/chat/completions", json={"model": "m", "messages": user("a")})
        passed = await http.post("/v1/chat/completions", json={"model": "m", "messages": user("b")})

    assert failed.status_code == 400
    assert failed.json()["error"]["message"] == "context length exceeded"
    assert failed.json()["error"]["type"] == "invalid_request_error"
    assert passed.json()["choices"][0]["message"]["content"] == "fine"


async def test_fail_next_fails_any_request_with_retry_after_then_stops(scripted):
    scripted.fail_next(503, times=2, retry_after=3)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=scripted.app), base_url="http://scripted"
    ) as http:
        body = {"model": "e", "input": "hello"}
        statuses = [(await http.post("/v1/embeddings", json=body)) for _ in range(3)]

    assert [r.status_code for r in statuses] == [503, 503, 200]
    assert statuses[0].headers["retry-after"] == "3"
    assert len(scripted.embedding_requests) == 3


async def test_malformed_requests_get_a_400(scripted):
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=scripted.app), base_url="http://scripted"
    ) as http:
        not_json = await http.post("/v1/chat/completions", content=b"{oops")
        no_messages = await http.post("/v1/chat/completions", json={"model": "m"})
        tokens = await http.post("/v1/embeddings", json={"model": "e", "input": [[1, 2, 3]]})

    assert [r.status_code for r in (not_json, no_messages, tokens)] == [400, 400, 400]
    assert "messages" in no_messages.json()["error"]["message"]
    assert scripted.pending_answers == 0


async def test_requests_are_recorded_with_prompt_images_and_headers(scripted):
    scripted.reply("ok")
    messages = [
        {"role": "system", "content": "Be kind."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look"},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            ],
        },
    ]
    async with scripted.openai_client() as client:
        await client.chat.completions.create(model="m", messages=messages)

    [request] = scripted.requests
    assert request.path == "/v1/chat/completions"
    assert request.prompt == "Be kind.\nLook"
    assert request.image_urls == ["https://example.com/a.png"]
    assert request.headers["authorization"] == "Bearer scripted-key"
    assert request.schema_name is None


async def test_embeddings_are_deterministic_in_float_and_base64(scripted):
    async with scripted.openai_client() as client:
        as_floats = await client.embeddings.create(
            model="e", input=["one fish", "two fish"], encoding_format="float"
        )
        as_base64 = await client.embeddings.create(model="e", input=["one fish", "two fish"])
        narrow = await client.embeddings.create(
            model="e", input="one fish", dimensions=8, encoding_format="float"
        )

    floats = [item.embedding for item in as_floats.data]
    assert floats == [scripted_embedding("one fish"), scripted_embedding("two fish")]
    for decoded, expected in zip(as_base64.data, floats, strict=True):
        assert decoded.embedding == pytest.approx(expected, abs=1e-6)
    assert len(floats[0]) == 64
    assert narrow.data[0].embedding == pytest.approx(scripted_embedding("one fish", 8))
    assert as_floats.model == "e"
    assert as_floats.usage.prompt_tokens == 4


async def test_embedding_dim_sets_the_vector_length():
    server = ScriptedOpenAI(embedding_dim=16)
    async with server.llm_client() as llm:
        [vector] = await llm.embed(["sixteen numbers"])

    assert vector == scripted_embedding("sixteen numbers", 16)


def test_embedding_similarity_follows_shared_words():
    def cosine(a, b):
        return sum(x * y for x, y in zip(a, b, strict=True))  # vectors are unit length

    tea = scripted_embedding("I drink green tea")
    assert scripted_embedding("i DRINK green tea!") == tea
    assert cosine(tea, scripted_embedding("green tea every morning")) > 0.4
    assert scripted_embedding("") == scripted_embedding("?!")
    assert sum(x * x for x in scripted_embedding("")) == pytest.approx(1.0)


async def test_models_are_listed(scripted):
    async with scripted.openai_client() as client:
        page = await client.models.list()

    assert [model.id for model in page.data] == [
        "scripted-small",
        "scripted-large",
        "scripted-embedding",
    ]


async def test_streaming_over_http_is_real_sse_ending_with_done(scripted):
    scripted.reply("streams come in pieces")
    body = {"model": "m", "messages": user("go"), "stream": True}
    body["stream_options"] = {"include_usage": True}
    with scripted.serve() as base_url:
        async with (
            httpx.AsyncClient() as http,
            http.stream("POST", f"{base_url}/chat/completions", json=body) as response,
        ):
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = [line async for line in response.aiter_lines() if line]

    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert {chunk["model"] for chunk in chunks} == {"m"}
    text = "".join(
        chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks if chunk["choices"]
    )
    assert text == "streams come in pieces"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["completion_tokens"] == 6  # 22 bytes, 4 a token


async def test_sdk_streaming_over_http_arrives_in_order(scripted):
    scripted.reply("a b c d e")
    with scripted.serve() as base_url:
        async with openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0) as client:
            stream = await client.chat.completions.create(
                model="m", messages=user("go"), stream=True
            )
            deltas = [c.choices[0].delta.content async for c in stream if c.choices]

    assert [d for d in deltas if d] == ["a", " b", " c", " d", " e"]


async def test_concurrent_requests_over_http_each_get_one_answer(scripted):
    answers = [f"answer {n}" for n in range(20)]
    scripted.reply(*answers)
    with scripted.serve() as base_url:
        async with openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0) as client:
            completions = await asyncio.gather(
                *(
                    client.chat.completions.create(model="m", messages=user(str(n)))
                    for n in range(20)
                )
            )

    assert sorted(c.choices[0].message.content for c in completions) == sorted(answers)
    assert len(scripted.chat_requests) == 20
    assert scripted.pending_answers == 0


async def test_serve_stops_listening_on_exit(scripted):
    with scripted.serve() as base_url:
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{base_url}/models")).status_code == 200

    async with httpx.AsyncClient() as http:
        with pytest.raises(httpx.ConnectError):
            await http.get(f"{base_url}/models")
