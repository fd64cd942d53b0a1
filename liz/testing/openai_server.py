"""A scripted OpenAI-compatible server, for testing agents without a real LLM.

``ScriptedOpenAI`` is a small Starlette app that speaks enough of OpenAI's HTTP API
for the real ``openai`` SDK: chat completions (plain, JSON mode, json_schema and
``stream: true`` as server-sent events), embeddings and the model list. It records
every request and answers chat completions from a queue you fill, or from a function.
Embeddings need no script: they are a hashed bag of words, so texts that share words
are close and identical texts get identical vectors.

Example::

    server = ScriptedOpenAI()
    server.reply("Hello!", {"value": True, "explanation": "it rains"})
    async with server.llm_client() as llm:  # in-process, no socket
        assert await llm.text("Hi") == "Hello!"
        assert (await llm.boolean("Is it raining?")).value
    assert "Hi" in server.chat_requests[0].prompt

    with server.serve() as base_url:  # real HTTP on 127.0.0.1, in a thread
        settings = Settings(openai_base_url=base_url)  # e.g. for `liz serve`

Answers are used in order, one per chat request: a ``str`` becomes the message text,
a ``dict``/``list``/pydantic model becomes JSON text, a :class:`ScriptedError` fails
that request. With the queue empty, ``respond_with(fn)`` decides (``fn`` gets the
:class:`RecordedRequest`); with neither, the request fails with a 500 saying so.
``fail_next(status)`` fails the next requests of any kind, before the queue is used,
to exercise retries. The server is thread-safe: ``serve()`` runs it in its own thread.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import itertools
import json
import math
import re
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import uvicorn
from openai import AsyncOpenAI
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

if TYPE_CHECKING:
    from liz.llm.client import LLMClient

NO_ANSWER = "ScriptedOpenAI has no answer queued; call reply() or respond_with()"
SCRIPTED_BASE_URL = "http://scripted/v1"
_READY_PATH = "/_scripted/ready"
_WORD = re.compile(r"\w+")
_STREAM_PIECE = re.compile(r"\s*\S+|\s+$")


@dataclass(frozen=True)
class ScriptedError:
    """An answer that fails its request with ``status`` and OpenAI's error body."""

    status: int
    message: str = "scripted failure"
    retry_after: float | None = None


Answer = str | dict[str, Any] | list[Any] | BaseModel | ScriptedError
Responder = Callable[["RecordedRequest"], Answer | Awaitable[Answer]]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def model(self) -> str | None:
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        if not isinstance(messages, list):
            return []
        return [message for message in messages if isinstance(message, dict)]

    @property
    def prompt(self) -> str:
        """The text of every message, joined by newlines (for ``in`` checks)."""
        return "\n".join(_text_of(message.get("content")) for message in self.messages)

    @property
    def image_urls(self) -> list[str]:
        """URLs of every ``image_url`` content part, in order."""
        return [
            part["image_url"]["url"]
            for message in self.messages
            if isinstance(message.get("content"), list)
            for part in message["content"]
            if isinstance(part, dict) and part.get("type") == "image_url"
        ]

    @property
    def response_format(self) -> dict[str, Any] | None:
        value = self.body.get("response_format")
        return value if isinstance(value, dict) else None

    @property
    def schema_name(self) -> str | None:
        """The json_schema name asked for, or None for other kinds of answer."""
        spec = (self.response_format or {}).get("json_schema")
        return spec.get("name") if isinstance(spec, dict) else None

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True

    @property
    def inputs(self) -> list[str]:
        """The texts of an embeddings request."""
        value = self.body.get("input")
        return [value] if isinstance(value, str) else list(value or [])


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


class ScriptedOpenAI:
    """An OpenAI-compatible server whose chat answers are scripted by the test."""

    def __init__(self, *, embedding_dim: int = 64) -> None:
        self.embedding_dim = embedding_dim
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._answers: deque[Answer] = deque()
        self._failures: deque[ScriptedError] = deque()
        self._responder: Responder | None = None
        self._ids = itertools.count(1)
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route(_READY_PATH, self._ready, methods=["GET"]),
            ]
        )

    # -- scripting -------------------------------------------------------------------

    def reply(self, *answers: Answer) -> None:
        """Queue answers for the next chat requests, first in, first out."""
        with self._lock:
            self._answers.extend(answers)

    def respond_with(self, responder: Responder | None) -> None:
        """Answer chat requests with ``responder(request)`` (sync or async) when none is queued."""
        with self._lock:
            self._responder = responder

    def fail_next(self, status: int, times: int = 1, retry_after: float | None = None) -> None:
        """Fail the next ``times`` requests (chat or embeddings) with ``status``."""
        error = ScriptedError(status, f"scripted failure with status {status}", retry_after)
        with self._lock:
            self._failures.extend([error] * times)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, failed ones included, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == "/v1/chat/completions"]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == "/v1/embeddings"]

    @property
    def pending_answers(self) -> int:
        """How many queued answers no request has used yet."""
        with self._lock:
            return len(self._answers)

    # -- clients ---------------------------------------------------------------------

    def openai_client(self, *, max_retries: int = 1, timeout: float = 10.0) -> AsyncOpenAI:
        """An ``AsyncOpenAI`` that reaches this app in-process, without a socket."""
        transport = httpx.ASGITransport(app=self.app)
        return AsyncOpenAI(
            api_key="scripted-key",
            base_url=SCRIPTED_BASE_URL,
            max_retries=max_retries,
            timeout=timeout,
            # The SDK takes httpx clients as well as its own httpx2 ones.
            http_client=_any(httpx.AsyncClient(transport=transport)),
        )

    def llm_client(
        self,
        *,
        small_model: str = "scripted-small",
        large_model: str = "scripted-large",
        embedding_model: str = "scripted-embedding",
        max_retries: int = 1,
        timeout: float = 10.0,
        **options: Any,
    ) -> LLMClient:
        """An ``LLMClient`` on :meth:`openai_client`; ``options`` go to ``LLMClient``."""
        from liz.llm.client import LLMClient

        return LLMClient(
            self.openai_client(max_retries=max_retries, timeout=timeout),
            small_model=small_model,
            large_model=large_model,
            embedding_model=embedding_model,
            **options,
        )

    @contextmanager
    def serve(self) -> Iterator[str]:
        """Serve over real HTTP on 127.0.0.1 in a thread; yields the base URL (``.../v1``)."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        # log_config=None: a test double must not reconfigure the process's logging.
        config = uvicorn.Config(self.app, log_config=None, lifespan="off", access_log=False)
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [listener]}, name=f"scripted-openai-{port}"
        )
        thread.start()
        root = f"http://127.0.0.1:{port}"
        try:
            _wait_until_ready(root, thread)
            yield f"{root}/v1"
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            listener.close()

    # -- endpoints -------------------------------------------------------------------

    async def _chat(self, request: Request) -> Response:
        recorded, refusal = await self._receive(request)
        if refusal is not None:
            return refusal
        body = recorded.body
        if not isinstance(body.get("model"), str) or not recorded.messages:
            return _error(400, "'model' (a string) and 'messages' (a non-empty list) are required")
        answer = await self._next_answer(recorded)
        if answer is None:
            # A missing script is a test bug: tell the SDK not to retry it.
            return _error(500, NO_ANSWER, headers={"x-should-retry": "false"})
        if isinstance(answer, ScriptedError):
            return _error(answer.status, answer.message, answer.retry_after)
        content = _as_content(answer)
        completion_id = f"chatcmpl-scripted-{next(self._ids)}"
        usage = _usage(recorded.prompt, content)
        if recorded.stream:
            options = body.get("stream_options") or {}
            chunks = _stream_chunks(completion_id, body["model"], content)
            if isinstance(options, dict) and options.get("include_usage"):
                chunks.append(_chunk(completion_id, body["model"], [], usage=usage))
            return StreamingResponse(_sse(chunks), media_type="text/event-stream")
        message = {"role": "assistant", "content": content, "refusal": None}
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
                ],
                "usage": usage,
            }
        )

    async def _embeddings(self, request: Request) -> Response:
        recorded, refusal = await self._receive(request)
        if refusal is not None:
            return refusal
        body = recorded.body
        texts = recorded.inputs
        if not isinstance(body.get("model"), str) or not texts:
            return _error(
                400, "'model' (a string) and 'input' (text or a list of texts) are required"
            )
        if not all(isinstance(text, str) and text for text in texts):
            return _error(
                400, "'input' must hold non-empty strings (ScriptedOpenAI embeds text only)"
            )
        dimensions = body.get("dimensions") or self.embedding_dim
        if not isinstance(dimensions, int) or dimensions < 1:
            return _error(400, "'dimensions' must be a positive integer")
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vector = scripted_embedding(text, dimensions)
            encoded: Any = vector
            if as_base64:
                encoded = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(_WORD.findall(text)) for text in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _models(self, request: Request) -> Response:
        with self._lock:
            self._requests.append(_recorded(request, {}))
        names = ["scripted-small", "scripted-large", "scripted-embedding"]
        models = [
            {"id": name, "object": "model", "created": 0, "owned_by": "liz"} for name in names
        ]
        return JSONResponse({"object": "list", "data": models})

    async def _ready(self, request: Request) -> Response:
        return JSONResponse({"ready": True})

    async def _receive(self, request: Request) -> tuple[RecordedRequest, Response | None]:
        """Record the request; a response when it must fail (bad JSON or a scripted failure)."""
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        recorded = _recorded(request, body if isinstance(body, dict) else {})
        with self._lock:
            self._requests.append(recorded)
            failure = self._failures.popleft() if self._failures else None
        if failure is not None:
            return recorded, _error(failure.status, failure.message, failure.retry_after)
        if not isinstance(body, dict):
            return recorded, _error(400, "the request body must be a JSON object")
        return recorded, None

    async def _next_answer(self, recorded: RecordedRequest) -> Answer | None:
        with self._lock:
            if self._answers:
                return self._answers.popleft()
            responder = self._responder
        if responder is None:
            return None
        answer = responder(recorded)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer


def _any(value: object) -> Any:
    return value


def _recorded(request: Request, body: dict[str, Any]) -> RecordedRequest:
    return RecordedRequest(request.method, request.url.path, body, dict(request.headers))


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        ).strip()
    return ""


def _as_content(answer: Answer) -> str:
    if isinstance(answer, str):
        return answer
    if isinstance(answer, BaseModel):
        return answer.model_dump_json()
    return json.dumps(answer)


def _usage(prompt: str, content: str) -> dict[str, int]:
    # Word counts stand in for tokens: deterministic, and no tokenizer download.
    prompt_tokens = len(_WORD.findall(prompt))
    completion_tokens = len(_WORD.findall(content))
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _chunk(
    completion_id: str,
    model: str,
    choices: list[dict[str, Any]],
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        "usage": usage,
    }


def _stream_chunks(completion_id: str, model: str, content: str) -> list[dict[str, Any]]:
    """OpenAI's chunk sequence: the role, one chunk per word, then the finish reason."""

    def choice(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}

    deltas = [{"role": "assistant", "content": ""}]
    deltas += [{"content": piece} for piece in _STREAM_PIECE.findall(content)]
    chunks = [_chunk(completion_id, model, [choice(delta)]) for delta in deltas]
    chunks.append(_chunk(completion_id, model, [choice({}, "stop")]))
    return chunks


async def _sse(chunks: list[dict[str, Any]]) -> AsyncIterator[str]:
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


def _error(
    status: int,
    message: str,
    retry_after: float | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
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


def _wait_until_ready(root: str, thread: threading.Thread) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not thread.is_alive():
            raise RuntimeError("ScriptedOpenAI's server thread stopped while starting")
        try:
            if httpx.get(root + _READY_PATH, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"ScriptedOpenAI did not answer at {root} within 10 seconds")
