"""Fuzz ``POST /agent/input`` with generated bodies: never a 5xx, and a refused body stores nothing.

Hypothesis writes the bodies (1,000 per database): raw bytes, any JSON, and Liz's
``{"input": {...}}`` with every field drawn from nasty values (lone surrogates,
controls, invisible characters, huge numbers, deep nesting, hostile image URLs).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from liz.db.tables import MemoryRecord
from liz.runtime.services import Runtime
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI

pytestmark = pytest.mark.anyio
AGENT = "business-advisor"
EXAMPLES = 1000

# Any code point at all: lone surrogates, controls and unassigned ones included.
any_text = st.text(st.characters(exclude_categories=()), max_size=30)
invisible_text = st.text(
    st.sampled_from(["\u200b", "\u200d", "\u2060", "\ufeff", " ", "\t", "\u3164", "\u0301"]),
    min_size=1,
    max_size=6,
)
plain_text = st.text(st.characters(codec="utf-8"), min_size=1, max_size=30)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12,
)
ids = st.one_of(
    st.just("u1"),
    plain_text,
    any_text,
    invisible_text,
    st.text(min_size=250, max_size=270),
    st.integers(),
    st.none(),
    json_values,
)
hosts = st.sampled_from(
    [
        "example.com",
        "127.0.0.1",
        "127.1",
        "2130706433",
        "0x7f.1",
        "[::1]",
        "[::ffff:169.254.169.254]",
        "169.254.169.254",
        "10.1.2.3",
        "localhost",
        "metadata.google.internal",
        "user@example.com",
        "",
        "exa mple.com",
        "[::1",
    ]
)
urls = st.one_of(
    st.builds(
        lambda scheme, host: f"{scheme}://{host}/a.png",
        st.sampled_from(["http", "https", "file", "ftp", "HTTP"]),
        hosts,
    ),
    st.sampled_from(
        [
            "",
            "  ",
            "javascript:alert(1)",
            "data:image/png;base64,iVBORw0KGgo=",
            "data:text/html;base64,PHNjcmlwdD4=",
            "data:image/svg+xml;base64,PHN2Zz4=",
            "https://example.com/" + "a" * 3000,
        ]
    ),
    any_text,
)
input_fields = st.fixed_dictionaries(
    {"agentId": st.one_of(st.just(AGENT), ids), "userId": ids},
    optional={
        "text": st.one_of(plain_text, any_text, invisible_text, st.none(), json_values),
        "type": st.sampled_from(["text", "text_and_image", "video", "", None]),
        "imageUrls": st.one_of(st.lists(urls, max_size=12), json_values),
        "roomId": ids,
        "source": st.sampled_from(["NETWORK", "INTERNAL", "CLI", 7]),
        "route": st.sampled_from(["conversation", "create_new_tweet"]),
        "extra": json_values,
    },
)
visible_text = st.text(
    st.characters(categories=["L", "N", "P", "S", "Zs"]), min_size=1, max_size=40
).filter(lambda text: any(c.isalnum() for c in text))
good_urls = st.sampled_from(
    [
        "https://example.com/a.png",
        "http://img.example.org/b.jpg",
        "data:image/png;base64,iVBORw0KGgo=",
    ]
)
near_valid_inputs = st.fixed_dictionaries(
    {"agentId": st.just(AGENT), "userId": visible_text, "text": visible_text},
    optional={
        "type": st.just("text_and_image"),
        "imageUrls": st.lists(st.one_of(good_urls, urls), min_size=1, max_size=3),
        "roomId": st.one_of(visible_text, invisible_text),
    },
)
INPUT = '{"input": {"agentId": "business-advisor", "userId": "u1", "text": %s}}'


def encoded(value: Any, *, raw_surrogates: bool) -> bytes:
    if raw_surrogates:  # surrogates as UTF-8 bytes, which is not valid UTF-8
        return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return json.dumps(value).encode()


bodies = st.one_of(
    st.builds(lambda fields: json.dumps({"input": fields}).encode(), near_valid_inputs),
    st.builds(lambda fields: json.dumps({"input": fields}).encode(), near_valid_inputs),
    st.builds(
        encoded,
        st.builds(lambda fields: {"input": fields}, input_fields),
        raw_surrogates=st.booleans(),
    ),
    st.builds(
        encoded,
        st.builds(lambda fields: {"input": fields}, input_fields),
        raw_surrogates=st.just(False),
    ),
    st.builds(encoded, json_values, raw_surrogates=st.booleans()),
    st.binary(max_size=120),
    st.integers(500, 20_000).map(lambda n: (INPUT % ("[" * n + "]" * n)).encode()),
    st.integers(500, 20_000).map(lambda n: (INPUT % ("[" * n)).encode()),
    st.integers(50, 6000).map(lambda n: (INPUT % ("9" * n)).encode()),
    st.sampled_from(
        ["NaN", "Infinity", "-Infinity", "1e999", "-1e400", '"\\ud800"', '"\\u0000"']
    ).map(lambda literal: (INPUT % literal).encode()),
    st.builds(
        lambda fields, cut: encoded({"input": fields}, raw_surrogates=False)[:cut],
        input_fields,
        st.integers(0, 60),
    ),
)


async def memory_count(runtime: Runtime) -> int:
    async with runtime.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(MemoryRecord)) or 0)


def answer(request: RecordedRequest) -> str | dict[str, Any]:
    return {"facts": []} if request.response_format else "Noted."


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    # One app and one database for all examples, on purpose: each example checks its
    # own effect (rows before and after).
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(payload=bodies)
async def test_no_generated_body_gets_a_5xx_and_a_refused_one_stores_nothing(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime, payload: bytes
) -> None:
    scripted.respond_with(answer)
    await runtime.background.drain()
    rows, llm_calls = await memory_count(runtime), len(scripted.requests)
    response = await client.post(
        "/agent/input", content=payload, headers={"content-type": "application/json"}
    )
    assert response.status_code < 500, (payload[:300], response.text)
    event(f"answered {response.status_code}")
    if response.status_code == 200:
        assert await memory_count(runtime) == rows + 2
        return
    assert response.status_code in (400, 404), (payload[:300], response.text)
    assert response.json()["error"]
    assert await memory_count(runtime) == rows, payload[:300]
    assert len(scripted.requests) == llm_calls, payload[:300]
