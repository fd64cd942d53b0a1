"""Input at the edge: every malformed body is a clear 4xx that stores nothing and calls no LLM.

Real HTTP through the app, on SQLite and PostgreSQL, with the scripted LLM.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from liz.db.tables import MemoryRecord
from liz.runtime.image_urls import image_url_problem
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI

pytestmark = pytest.mark.anyio
AGENT = "business-advisor"
JSON = {"Content-Type": "application/json"}


async def memory_count(runtime: Runtime) -> int:
    async with runtime.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(MemoryRecord)) or 0)


def body(**fields: Any) -> dict[str, Any]:
    return {"input": {"agentId": AGENT, "userId": "u1", "text": "hi", **fields}}


def image_body(*urls: str) -> dict[str, Any]:
    return body(type="text_and_image", imageUrls=list(urls))


def raw(text: str) -> bytes:
    return text.encode()


DEEP = "nests more than 32 levels deep"
NESTED = '{"input": {"agentId": "business-advisor", "userId": "u1", "text": "hi", "x": %s}}'

BAD_BODIES: list[tuple[bytes | dict[str, Any], str]] = [
    (raw(NESTED % ("[" * 1000 + "]" * 1000)), DEEP),
    (raw(NESTED % ("[" * 100_000 + "]" * 100_000)), DEEP),
    (raw(NESTED % ('{"a":' * 2000 + "1" + "}" * 2000)), DEEP),
    (raw(NESTED % ("[" * 5000)), DEEP),  # and never closed
    (raw(NESTED % ("[" * 31 + "]" * 31)), DEEP),  # 33 with the two objects around it
    (raw(NESTED % ("[" * 200 + "]" * 200)), DEEP),
    (raw(NESTED % ("9" * 5000)), "a number of more than 100 digits"),
    (raw(NESTED % ("-" + "9" * 5000)), "a number of more than 100 digits"),
    (raw(NESTED % ("9" * 101)), "a number of more than 100 digits"),
    (raw(NESTED % ("0." + "1" * 101)), "a number of more than 100 digits"),
    (raw(NESTED % ("1" * 4000 + ".5")), "a number of more than 100 digits"),
    (raw(NESTED % ("9" * 100 + "e300")), "too large to represent"),
    (raw(NESTED % "1e999"), "too large to represent"),
    # Bodies that take a backtracking scanner hours (quadratic); here they are one pass.
    (raw(NESTED % ('"' + '\\"' * 300_000)), "not valid JSON"),
    (raw(NESTED % ('["' + '\\"' * 300_000 + '", ' + "[" * 40 + "]" * 40 + "]")), DEEP),
    (raw(NESTED % ("[" + "1," * 400_000 + '"\\ud800"]')), "lone surrogate (U+D800)"),
    (raw(NESTED % '["\\\\", "\\"]", "\\\\\\u0000"]'), "control character U+0000"),
    (raw(NESTED % "NaN"), "which JSON does not allow"),
    (raw(NESTED % "-Infinity"), "which JSON does not allow"),
    (raw('{"input": {"agentId": "business-advisor", "userId": ' + "7" * 5000 + "}}"), "digits"),
    (b'{"input": {"userId": "\xff\xfe"}}', "not valid UTF-8"),
    (raw(json.dumps(body(text="bad \ud800 half"))), "lone surrogate (U+D800)"),
    (raw(json.dumps(body(userId="\udfff"))), "lone surrogate (U+DFFF)"),
    (raw(json.dumps(body(note={"\ud83d": 1}))), "request body contains a lone surrogate (U+D83D)"),
    (body(userId="u\x00"), "contains the control character U+0000"),
    (body(text="nul \x00 inside"), "contains the control character U+0000"),
    (body(roomId="room\x00"), "contains the control character U+0000"),
    (body(userId="line\nbreak"), "userId contains the control character U+000A"),
    (body(userId="a\u2028b"), "userId contains the control character U+2028"),
    (body(text="\x1b[31mred"), "control character U+001B"),
    (body(userId="\u200b"), "userId has no visible characters"),
    (body(agentId="\u200b\u2060"), "agentId has no visible characters"),
    (body(text="\u200b\u200b\u200b"), "text has no visible characters"),
    (body(text="\u3164\u2800\ufeff"), "text has no visible characters"),
    (body(text="\u0301\u0301"), "text has no visible characters"),
    (body(roomId="\u200d"), "roomId has no visible characters"),
    (body(userId="u" * 257), "userId is 257 characters long; at most 256"),
    (body(text="x" * 100_001), "text is 100001 characters long"),
    (image_body(""), "imageUrls[0] is blank"),
    (image_body("   "), "imageUrls[0] is blank"),
    (image_body("https://example.com/a.png", " "), "imageUrls[1] is blank"),
    (image_body("file:///etc/passwd"), "has file:; only http(s) and data:image"),
    (image_body("javascript:alert(1)"), "has javascript:"),
    (image_body("ftp://example.com/a.png"), "has ftp:"),
    (image_body("//example.com/a.png"), "has no scheme"),
    (image_body("http://127.0.0.1/a.png"), "points at 127.0.0.1, a loopback, private"),
    (image_body("http://localhost:8080/a.png"), "a name without a dot"),
    (image_body("http://api.localhost/a.png"), "a name that only a local network knows"),
    (image_body("http://169.254.169.254/latest/meta-data/"), "points at 169.254.169.254"),
    (image_body("http://metadata.google.internal/x"), "only a local network knows"),
    (image_body("http://[::1]/a.png"), "points at ::1"),
    (image_body("http://[::ffff:127.0.0.1]/a.png"), "points at 127.0.0.1"),
    (image_body("http://[fd00:ec2::254]/"), "points at fd00:ec2::254"),
    (image_body("http://2130706433/a.png"), "points at 127.0.0.1"),
    (image_body("http://0x7f.1/a.png"), "points at 127.0.0.1"),
    (image_body("http://127.1/a.png"), "points at 127.0.0.1"),
    (image_body("http://0177.0.0.1/a.png"), "points at 127.0.0.1"),
    (image_body("http://10.0.0.5/a.png"), "points at 10.0.0.5"),
    (image_body("http://192.168.1.1./a.png"), "points at 192.168.1.1"),
    (image_body("http://100.64.0.1/a.png"), "points at 100.64.0.1"),
    (image_body("http://0.0.0.0/a.png"), "points at 0.0.0.0"),
    (image_body("http://1.2.3.999/a.png"), "looks like an IPv4 address but is not one"),
    (image_body("http://user:pw@example.com/a.png"), "has a user name or password"),
    (image_body("http://example.com\\@127.0.0.1/"), "backslashes"),
    (image_body("http://exa mple.com/a.png"), "contains spaces"),
    (image_body("http://example.com:99999/a.png"), "is not a valid URL"),
    (image_body("data:text/html;base64,PHNjcmlwdD4="), "is not a base64 image"),
    (image_body("data:image/svg+xml;base64,PHN2Zz4="), "is an image/svg+xml"),
    (image_body("data:image/png,not-base64"), "is not a base64 image"),
    (image_body("https://example.com/" + "a" * 2100), "at most 2048 are accepted"),
    (image_body(*[f"https://example.com/{i}.png" for i in range(11)]), "holds 11 URLs; at most 10"),
    (
        body(imageUrls=["https://example.com/a.png"]),
        "imageUrls are only read for inputs of type 'text_and_image'",
    ),
    (
        body(imageUrls=["http://169.254.169.254/"], type="text"),
        "imageUrls are only read for inputs of type 'text_and_image'",
    ),
]


@pytest.mark.parametrize(("payload", "message"), BAD_BODIES)
async def test_a_malformed_body_is_a_clear_400_that_stores_and_forwards_nothing(
    client: httpx.AsyncClient,
    scripted: ScriptedOpenAI,
    runtime: Runtime,
    payload: bytes | dict[str, Any],
    message: str,
) -> None:
    content = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    response = await client.post(
        "/agent/input", content=content, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]
    assert await memory_count(runtime) == 0
    assert scripted.requests == []


@pytest.mark.parametrize(
    "urls",
    [
        ["https://example.com/cat.png"],
        ["http://img.example.org:8080/a.jpg?size=large#top", "data:image/png;base64,iVBORw0KGgo="],
        ["https://[2606:4700:4700::1111]/a.png", "https://93.184.216.34/a.png"],
    ],
)
async def test_public_and_inline_images_reach_the_llm(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI, runtime: Runtime, urls: list[str]
) -> None:
    scripted.reply("A cat.")
    response = await client.post("/agent/input", json=image_body(*urls))
    assert response.status_code == 200, response.text
    assert scripted.chat_requests[-1].image_urls == urls
    assert await memory_count(runtime) == 2


async def test_invisible_characters_around_visible_text_are_fine(
    client: httpx.AsyncClient, scripted: ScriptedOpenAI
) -> None:
    scripted.reply("Hello.")
    response = await client.post("/agent/input", json=body(text="\u200bhi\u200d 👋🏽", userId="ü1"))
    assert response.status_code == 200, response.text
    assert "\u200bhi\u200d 👋🏽" in scripted.chat_requests[-1].prompt


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://example.com/a.png", None),
        ("HTTPS://EXAMPLE.COM/A.PNG", None),
        ("https://8.8.8.8/a.png", None),
        ("https://example.com.", None),
        ("DATA:IMAGE/JPEG;base64,/9j/4AAQ", None),
        ("data:image/webp;charset=x;base64,UklGRg==", None),
        ("http://[64:ff9b::7f00:1]/", "points at 127.0.0.1"),
        ("http://[2002:7f00:1::]/", "points at 127.0.0.1"),
        ("http://[fe80::1%25eth0]/", "has an IPv6 zone"),
        ("http://[::]/", "points at ::"),
        ("http://224.0.0.1/", "points at 224.0.0.1"),
        ("http://intranet/", "a name without a dot"),
        ("http://printer.local/", "only a local network knows"),
        ("http://router.home.arpa/", "only a local network knows"),
        ("http:///a.png", "has no host"),
        ("http://[::1/", "is not a valid URL"),
        ("data:image/png;base64,", "without data"),
        ("data:image/png;base64," + "A" * 700_000, "at most 700000"),
    ],
)
def test_image_url_rules(url: str, problem: str | None) -> None:
    found = image_url_problem(url)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


async def test_a_declared_length_over_the_limit_is_refused_before_reading(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    response = await client.post("/agent/input", content=b" " * 1_000_001, headers=JSON)
    assert response.status_code == 413
    assert "larger than 1000000 bytes" in response.json()["error"]
    assert await memory_count(runtime) == 0


async def test_a_chunked_body_over_the_limit_is_refused_without_reading_the_rest(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    chunk = b" " * 65_536
    total = 300 * 1024 * 1024
    sent = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal sent
        while sent < total:
            sent += len(chunk)
            yield chunk

    response = await client.post("/agent/input", content=endless(), headers=JSON)
    assert response.status_code == 413
    assert sent < 2 * 1024 * 1024  # the app stopped pulling right after the first megabyte
    assert await memory_count(runtime) == 0


async def test_a_bad_idempotency_key_is_a_400(client: httpx.AsyncClient, runtime: Runtime) -> None:
    for key in (b"", b"with space", "ü".encode(), b"k" * 256):
        response = await client.post("/agent/input", json=body(), headers={"idempotency-key": key})
        assert response.status_code == 400
        assert "must be 1 to 255 visible ASCII characters" in response.json()["error"]
    assert await memory_count(runtime) == 0
