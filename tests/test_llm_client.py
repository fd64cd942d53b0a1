"""LLMClient through the real openai SDK against the scripted server, in-process and over HTTP."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import numpy as np
import pytest
from openai import AsyncOpenAI
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from liz.config import Settings
from liz.errors import LLMError, UsageError
from liz.llm import BooleanAnswer, LLMClient, LLMOutputError
from liz.testing.openai_server import ScriptedError, scripted_embedding
from liz.testing.threaded_server import serve_in_thread

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Trip(BaseModel):
    destination: str
    days: int


class Leg(BaseModel):
    city: str
    nights: int | None = None


class Itinerary(BaseModel):
    first: Leg
    rest: list[Leg] = []


class Tags(BaseModel):
    counts: dict[str, int]


def settings(**values: Any) -> Settings:
    """Settings from these values only: no .env file, no LLM variables from the environment."""
    base: dict[str, Any] = {"openai_api_key": None, "openai_base_url": None}
    base["openrouter_api_key"] = None
    return Settings(_env_file=None, **{**base, **values})


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- text, models, images ----------------------------------------------------------------


async def test_text_returns_the_answer_and_sends_system_and_user(scripted, llm):
    scripted.reply("Hello, traveller.")

    answer = await llm.text("Hi there", system="You are a guide.")

    assert answer == "Hello, traveller."
    [request] = scripted.chat_requests
    assert request.messages == [
        {"role": "system", "content": "You are a guide."},
        {"role": "user", "content": "Hi there"},
    ]


async def test_text_takes_a_conversation(scripted, llm):
    scripted.reply("Paris")
    conversation = [
        {"role": "user", "content": "Where should I go?"},
        {"role": "assistant", "content": "Somewhere with food?"},
        {"role": "user", "content": "Yes, in France."},
    ]

    assert await llm.text(conversation) == "Paris"
    assert scripted.chat_requests[0].messages == conversation


async def test_small_and_large_model_names_reach_the_server(scripted):
    scripted.reply("a", "b", {"value": True, "explanation": "yes"})
    async with scripted.llm_client(small_model="tiny-1", large_model="huge-2") as llm:
        await llm.text("x", size="small")
        await llm.text("x")
        await llm.boolean("x?")

    assert [r.model for r in scripted.chat_requests] == ["tiny-1", "huge-2", "tiny-1"]


async def test_images_are_sent_as_image_url_parts(scripted, llm):
    scripted.reply("a cat")
    urls = ["https://example.com/cat.png", "data:image/png;base64,iVBORw0KGgo="]

    await llm.text("What is this?", image_urls=urls)

    [request] = scripted.chat_requests
    assert request.messages[-1]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": urls[0]}},
        {"type": "image_url", "image_url": {"url": urls[1]}},
    ]
    assert request.image_urls == urls


async def test_an_empty_text_answer_is_an_output_error(scripted, llm):
    scripted.reply("")

    with pytest.raises(LLMOutputError, match="empty answer"):
        await llm.text("Hi")


async def test_bad_messages_are_refused_before_any_request(scripted, llm):
    with pytest.raises(UsageError, match="role 'robot'"):
        await llm.text([{"role": "robot", "content": "beep"}])
    with pytest.raises(UsageError, match="size 'medium'"):
        await llm.text("x", size="medium")

    assert scripted.requests == []


# -- structured output -------------------------------------------------------------------


async def test_structured_returns_a_validated_model_from_a_strict_schema(scripted, llm):
    scripted.reply({"destination": "Lisbon", "days": 4})

    trip = await llm.structured("Plan a trip", Trip)

    assert trip == Trip(destination="Lisbon", days=4)
    [request] = scripted.chat_requests
    assert request.schema_name == "Trip"
    spec = request.response_format["json_schema"]
    assert spec["strict"] is True
    assert spec["schema"]["additionalProperties"] is False
    assert sorted(spec["schema"]["required"]) == ["days", "destination"]


async def test_malformed_json_is_retried_once_with_the_error_shown(scripted, llm):
    scripted.reply('{"destination": "Lisbon", "days": ', {"destination": "Porto", "days": 2})

    trip = await llm.structured("Plan a trip", Trip)

    assert trip == Trip(destination="Porto", days=2)
    first, retry = scripted.chat_requests
    assert retry.messages[: len(first.messages)] == first.messages
    assert retry.messages[-2] == {
        "role": "assistant",
        "content": '{"destination": "Lisbon", "days": ',
    }
    assert retry.messages[-1]["role"] == "user"
    assert "Invalid JSON" in retry.messages[-1]["content"]


async def test_wrong_schema_is_retried_naming_the_bad_field(scripted, llm):
    scripted.reply({"destination": "Lisbon", "days": "many"}, {"destination": "Lisbon", "days": 3})

    assert (await llm.structured("Plan", Trip)).days == 3
    assert "days" in scripted.chat_requests[1].messages[-1]["content"]


async def test_empty_structured_answer_is_retried(scripted, llm):
    scripted.reply("", {"destination": "Rome", "days": 1})

    assert (await llm.structured("Plan", Trip)).destination == "Rome"
    assert "empty" in scripted.chat_requests[1].messages[-1]["content"]


async def test_twice_invalid_raises_output_error_after_exactly_two_requests(scripted, llm):
    scripted.reply("no idea", {"destination": "Rome"})

    with pytest.raises(LLMOutputError) as raised:
        await llm.structured("Plan", Trip)

    assert isinstance(raised.value, LLMError)
    assert raised.value.status == 502
    assert "days" in raised.value.message
    assert raised.value.output == '{"destination": "Rome"}'
    assert len(scripted.chat_requests) == 2


async def test_json_fences_around_the_answer_are_accepted(scripted, llm):
    scripted.reply('```json\n{"destination": "Oslo", "days": 5}\n```')

    assert await llm.structured("Plan", Trip) == Trip(destination="Oslo", days=5)
    assert len(scripted.chat_requests) == 1


async def test_nested_models_are_closed_and_fully_required_in_the_schema(scripted, llm):
    scripted.reply({"first": {"city": "Lyon", "nights": None}, "rest": []})

    assert (await llm.structured("Route", Itinerary)).first.city == "Lyon"
    spec = scripted.chat_requests[0].response_format["json_schema"]
    assert spec["strict"] is True
    leg = spec["schema"]["$defs"]["Leg"]
    assert leg["additionalProperties"] is False
    assert leg["required"] == ["city", "nights"]


async def test_free_form_maps_are_sent_without_strict_mode(scripted, llm):
    scripted.reply({"counts": {"tea": 2}})

    assert (await llm.structured("Count", Tags)).counts == {"tea": 2}
    assert scripted.chat_requests[0].response_format["json_schema"]["strict"] is False


async def test_json_object_mode_puts_the_schema_in_the_system_message(scripted):
    scripted.reply({"destination": "Bergen", "days": 2})
    async with scripted.llm_client(structured_mode="json_object") as llm:
        trip = await llm.structured("Plan", Trip, system="Be brief.")

    assert trip.destination == "Bergen"
    [request] = scripted.chat_requests
    assert request.response_format == {"type": "json_object"}
    system = request.messages[0]["content"]
    assert system.startswith("Be brief.")
    assert '"destination"' in system


async def test_boolean_returns_value_and_explanation(scripted, llm):
    scripted.reply({"value": False, "explanation": "The sky is clear."})

    answer = await llm.boolean("Is it raining?")

    assert answer == BooleanAnswer(value=False, explanation="The sky is clear.")
    assert scripted.chat_requests[0].schema_name == "BooleanAnswer"
    assert "Is it raining?" in scripted.chat_requests[0].prompt


# -- streaming ---------------------------------------------------------------------------


async def test_stream_yields_tokens_in_order(scripted, llm):
    scripted.reply("Once upon a time, there was a bot.")

    deltas = [delta async for delta in llm.stream("Tell a story")]

    assert "".join(deltas) == "Once upon a time, there was a bot."
    assert deltas[:3] == ["Once", " upon", " a"]
    assert scripted.chat_requests[0].stream


async def test_a_failed_stream_raises_llm_error(scripted, llm):
    scripted.reply(ScriptedError(400, "model does not stream"))

    with pytest.raises(LLMError, match="model does not stream") as raised:
        [delta async for delta in llm.stream("Tell a story")]
    assert raised.value.status == 502


# -- embeddings --------------------------------------------------------------------------


async def test_embeddings_are_deterministic_and_similar_for_shared_words(scripted, llm):
    texts = ["I love green tea", "I love green tea", "green tea is lovely", "Quarterly tax forms"]

    vectors = await llm.embed(texts)

    assert len(vectors) == 4
    assert vectors[0] == vectors[1]
    assert cosine(vectors[0], vectors[2]) > cosine(vectors[0], vectors[3])
    assert cosine(vectors[0], vectors[2]) > 0.3
    assert scripted.embedding_requests[0].model == "scripted-embedding"


async def test_embeddings_keep_input_order_across_batches(scripted):
    texts = [f"text number {n} about topic {n * 7}" for n in range(5)]
    async with scripted.llm_client(embedding_batch_size=2) as llm:
        vectors = await llm.embed(texts)

    assert vectors == [scripted_embedding(text) for text in texts]
    assert [len(r.inputs) for r in scripted.embedding_requests] == [2, 2, 1]


async def test_embedding_an_empty_text_is_refused_before_any_request(scripted, llm):
    with pytest.raises(UsageError, match="text 1 is empty"):
        await llm.embed(["fine", "  "])
    assert await llm.embed([]) == []
    assert scripted.requests == []


class RawEndpoint:
    """An OpenAI-compatible endpoint over real HTTP that answers ``body``, to chat and
    embeddings requests alike."""

    def __init__(self) -> None:
        self.body = b""

    async def answer(self, request: Request) -> Response:
        return Response(self.body, media_type="application/json")


@pytest.fixture
async def raw_endpoint() -> AsyncIterator[tuple[RawEndpoint, LLMClient]]:
    endpoint = RawEndpoint()
    app = Starlette(
        routes=[
            Route("/v1/embeddings", endpoint.answer, methods=["POST"]),
            Route("/v1/chat/completions", endpoint.answer, methods=["POST"]),
        ]
    )
    with serve_in_thread(app) as url:
        openai = AsyncOpenAI(base_url=f"{url}/v1", api_key="test", max_retries=0)
        llm = LLMClient(openai, small_model="s", large_model="l", embedding_model="embedder")
        yield endpoint, llm
        await llm.close()


async def test_a_float_answer_and_a_base64_answer_give_the_same_vectors(raw_endpoint):
    endpoint, llm = raw_endpoint
    numbers = [[0.25, -1.5, 3.0], [1.0, 0.5, -0.125]]
    listed = [{"index": index, "embedding": vector} for index, vector in enumerate(numbers)]
    endpoint.body = json.dumps({"data": listed[::-1]}).encode()  # out of order, numbered

    assert await llm.embed(["a", "b"]) == numbers
    assert [v.tolist() for v in await llm.embed_float32(["a", "b"])] == numbers

    packed = [base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode() for v in numbers]
    endpoint.body = json.dumps({"data": [{"embedding": text} for text in packed]}).encode()
    assert [v.tolist() for v in await llm.embed_float32(["a", "b"])] == numbers


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"<html>502 Bad Gateway</html>", "answered with something that is not JSON"),
        (b'{"object": "list"}', "without a 'data' list"),
        (b'{"data": [{"embedding": 5, "index": 0}]}', "no usable vector for text 0"),
        (b'{"data": [{"embedding": "not base64!", "index": 0}]}', "no usable vector for text 0"),
        (b'{"data": [{"embedding": [], "index": 0}]}', "no usable vector for text 0"),
        (b'{"data": [{"embedding": ["0.1"], "index": 0}]}', "no usable vector for text 0"),
        (b'{"data": [{"embedding": [NaN, 1.0], "index": 0}]}', "NaN or infinity"),
        (b'{"data": [{"embedding": [1.0], "index": 3}]}', "numbered its vectors wrong"),
        (b'{"data": [{"embedding": [1.0]}, {"embedding": [1.0, 2.0]}]}', "2 vectors for 1 texts"),
    ],
)
async def test_a_broken_embeddings_answer_is_an_output_error_naming_what_is_wrong(
    raw_endpoint, body, error
):
    endpoint, llm = raw_endpoint
    endpoint.body = body

    with pytest.raises(LLMOutputError, match=error) as raised:
        await llm.embed_float32(["tea"])
    assert "embedder" in raised.value.message
    assert raised.value.status == 502


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"<html>502 Bad Gateway</html>", "not a JSON object"),
        (b'["a list"]', "not a JSON object"),
        (b'{"choices": []}', "returned an empty answer"),
        (b'{"choices": [{"message": {"refusal": "No."}}]}', "it refused: No."),
    ],
)
async def test_a_chat_answer_without_text_is_an_output_error_naming_what_came(
    raw_endpoint, body, error
):
    endpoint, llm = raw_endpoint
    endpoint.body = body

    with pytest.raises(LLMOutputError, match=error) as raised:
        await llm.text("Hi")
    assert raised.value.status == 502


async def test_a_chat_answers_calls_are_read_and_calls_of_other_kinds_skipped(raw_endpoint):
    endpoint, llm = raw_endpoint
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}},
        {"id": "c2", "type": "custom", "custom": {"name": "grep", "input": "x"}},
        {"id": "c3", "function": {"name": "clock"}},  # no type, no arguments: a function
    ]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    endpoint.body = json.dumps({"choices": [{"message": message}]}).encode()

    step = await llm.tool_step([{"role": "user", "content": "Hi"}], [])

    assert step.text == ""
    assert [(c.id, c.name, c.arguments) for c in step.calls] == [
        ("c1", "weather", "{}"),
        ("c3", "clock", ""),
    ]


async def test_vectors_of_different_lengths_in_one_answer_are_refused(raw_endpoint):
    endpoint, llm = raw_endpoint
    endpoint.body = b'{"data": [{"embedding": [1.0]}, {"embedding": [1.0, 2.0]}]}'

    with pytest.raises(LLMOutputError, match=r"different lengths \(1, 2\)"):
        await llm.embed(["tea", "coffee"])


# -- failures ----------------------------------------------------------------------------


async def test_a_500_then_success_is_retried_by_the_sdk(scripted, llm):
    scripted.fail_next(500)
    scripted.reply("recovered")

    assert await llm.text("Hi") == "recovered"
    assert len(scripted.chat_requests) == 2


async def test_exhausted_429_becomes_llm_error_with_retry_after(scripted):
    scripted.fail_next(429, times=2, retry_after=0.01)
    async with scripted.llm_client(max_retries=1) as llm:
        with pytest.raises(LLMError) as raised:
            await llm.text("Hi")

    assert raised.value.status == 503
    assert raised.value.retry_after == pytest.approx(0.01)
    assert "rate limit" in raised.value.message
    assert len(scripted.chat_requests) == 2


@pytest.mark.parametrize("call", ["text", "structured", "boolean", "stream", "embed"])
async def test_every_kind_of_call_carries_the_429s_retry_after(scripted, call):
    scripted.fail_next(429, retry_after=42)
    async with scripted.llm_client(max_retries=0) as llm:
        with pytest.raises(LLMError) as raised:
            if call == "text":
                await llm.text("Hi")
            elif call == "structured":
                await llm.structured("Plan", Trip)
            elif call == "boolean":
                await llm.boolean("Is it?")
            elif call == "stream":
                _ = [delta async for delta in llm.stream("Go")]
            else:
                await llm.embed(["some text"])

    assert raised.value.status == 503
    assert raised.value.retry_after == 42
    assert "rate limit" in raised.value.message
    assert len(scripted.requests) == 1


async def test_upstream_client_errors_become_502_with_the_upstream_message(scripted, llm):
    scripted.reply(ScriptedError(404, "The model `nope` does not exist"))

    with pytest.raises(LLMError, match="does not exist") as raised:
        await llm.text("Hi")

    assert raised.value.status == 502
    assert type(raised.value) is LLMError


# -- from_settings -----------------------------------------------------------------------


def test_from_settings_is_none_without_key_or_base_url():
    assert LLMClient.from_settings(settings()) is None


async def test_only_an_openrouter_key_chooses_openrouter():
    client = LLMClient.from_settings(
        settings(openrouter_api_key="sk-or-test", liz_large_model="anthropic/claude-sonnet-4")
    )

    assert client is not None
    async with client:
        assert str(client.openai.base_url) == "https://openrouter.ai/api/v1/"
        assert client.openai.api_key == "sk-or-test"
        assert client.small_model == "openai/gpt-4o-mini"
        assert client.large_model == "anthropic/claude-sonnet-4"


async def test_an_openai_key_alone_goes_to_openai():
    client = LLMClient.from_settings(settings(openai_api_key="sk-test"))

    assert client is not None
    async with client:
        assert str(client.openai.base_url) == "https://api.openai.com/v1/"
        assert client.large_model == "gpt-4o"


async def test_from_settings_with_only_a_base_url_talks_to_that_server_over_http(scripted):
    scripted.reply("served over HTTP", {"destination": "Nice", "days": 3})
    with scripted.serve() as base_url:
        config = settings(
            openai_base_url=base_url, liz_small_model="local-small", liz_llm_max_retries=0
        )
        client = LLMClient.from_settings(config)
        assert client is not None
        async with client:
            assert await client.text("Hi", size="small") == "served over HTTP"
            assert await client.structured("Plan", Trip) == Trip(destination="Nice", days=3)

    assert [r.model for r in scripted.chat_requests] == ["local-small", "gpt-4o"]
    assert scripted.chat_requests[0].headers["authorization"].startswith("Bearer ")


async def test_from_settings_uses_the_injected_http_client(scripted):
    transport = httpx.ASGITransport(app=scripted.app)
    client = LLMClient.from_settings(
        settings(openai_base_url="http://scripted/v1", openai_api_key="sk-local"),
        http_client=httpx.AsyncClient(transport=transport),
    )
    scripted.reply("through the injected client")

    assert client is not None
    async with client:
        assert await client.text("Hi") == "through the injected client"
    assert scripted.chat_requests[0].headers["authorization"] == "Bearer sk-local"


async def test_json_object_mode_comes_from_settings(scripted):
    transport = httpx.ASGITransport(app=scripted.app)
    client = LLMClient.from_settings(
        settings(openai_base_url="http://scripted/v1", liz_structured_output="json_object"),
        http_client=httpx.AsyncClient(transport=transport),
    )
    scripted.reply({"destination": "Oslo", "days": 1})

    assert client is not None
    async with client:
        assert await client.structured("Plan", Trip) == Trip(destination="Oslo", days=1)
    assert scripted.chat_requests[0].response_format == {"type": "json_object"}


def test_negative_retries_in_settings_are_refused():
    with pytest.raises(UsageError, match="LIZ_LLM_MAX_RETRIES"):
        LLMClient.from_settings(settings(openai_api_key="sk", liz_llm_max_retries=-1))


# -- over real HTTP ----------------------------------------------------------------------


def http_client_on(base_url: str, *, max_retries: int = 0, timeout: float = 10.0) -> LLMClient:
    config = settings(
        openai_base_url=base_url, liz_llm_max_retries=max_retries, liz_llm_timeout=timeout
    )
    client = LLMClient.from_settings(config)
    assert client is not None
    return client


async def test_over_http_structured_retry_stream_and_embeddings(scripted):
    scripted.reply("not json", {"destination": "Ghent", "days": 2}, "tokens arrive in order")
    with scripted.serve() as base_url:
        async with http_client_on(base_url) as llm:
            trip = await llm.structured("Plan", Trip)
            deltas = [delta async for delta in llm.stream("Go")]
            vectors = await llm.embed(["red apples", "red apples and pears"])

    assert trip.destination == "Ghent"
    assert "Invalid JSON" in scripted.chat_requests[1].prompt
    assert deltas == ["tokens", " arrive", " in", " order"]
    assert cosine(vectors[0], vectors[1]) > 0.5


async def test_over_http_a_500_then_success_is_retried(scripted):
    scripted.fail_next(500, retry_after=0.01)
    scripted.reply("second time lucky")
    with scripted.serve() as base_url:
        async with http_client_on(base_url, max_retries=1) as llm:
            assert await llm.text("Hi") == "second time lucky"

    assert len(scripted.chat_requests) == 2


async def test_over_http_exhausted_429_carries_retry_after(scripted):
    scripted.fail_next(429, retry_after=7)
    with scripted.serve() as base_url:
        async with http_client_on(base_url, max_retries=0) as llm:
            with pytest.raises(LLMError) as raised:
                await llm.text("Hi")

    assert raised.value.status == 503
    assert raised.value.retry_after == 7


async def test_connection_refused_becomes_llm_error_503():
    async with http_client_on(f"http://127.0.0.1:{closed_port()}/v1") as llm:
        with pytest.raises(LLMError, match="cannot reach") as raised:
            await llm.text("Hi")

    assert raised.value.status == 503


async def test_a_server_that_drops_the_connection_is_unreachable_not_slow():
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(100)  # the request starts arriving; no answer comes
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, http_client_on(f"http://127.0.0.1:{port}/v1") as llm:
        with pytest.raises(LLMError, match="cannot reach") as raised:
            await llm.text("Hi")

    assert raised.value.status == 503


async def test_a_slow_server_times_out_as_llm_error_503(scripted):
    released = False

    async def slow(request):
        for _ in range(500):
            if released:
                break
            await asyncio.sleep(0.01)
        return "too late"

    scripted.respond_with(slow)
    with scripted.serve() as base_url:
        async with http_client_on(base_url, timeout=0.2) as llm:
            with pytest.raises(LLMError, match="in time") as raised:
                await llm.text("Hi")
        released = True

    assert raised.value.status == 503
