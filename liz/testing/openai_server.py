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
that request, and ``call_tool(name, arguments)`` / ``call_tools(...)`` make the model
call tools (function calling, whole or streamed). With the queue empty,
``respond_with(fn)`` decides (``fn`` gets the :class:`RecordedRequest`); with neither,
the request fails with a 500 saying so.
``fail_next(status)`` fails the next requests of any kind, before the queue is used,
to exercise retries. The server is thread-safe: ``serve()`` runs it in its own thread.
Each answer's ``usage`` reports the prompt tokens an OpenAI-style prefix cache would
serve (``prompt_tokens_details.cached_tokens``; liz.testing.prompt_cache).
"""

from __future__ import annotations

import inspect
import itertools
import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

import httpx
from openai import AsyncOpenAI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from liz.testing.openai_requests import (
    Answer,
    RecordedRequest,
    Responder,
    ScriptedCall,
    ScriptedError,
    ToolCalls,
    call_tool,
    call_tools,
)
from liz.testing.openai_wire import (
    as_content,
    chunk,
    completion_body,
    embeddings_body,
    error_response,
    scripted_embedding,
    server_sent_events,
    stream_chunks,
    tool_call_items,
    usage,
)
from liz.testing.prompt_cache import PrefixCache, prompt_tokens
from liz.testing.threaded_server import serve_in_thread

if TYPE_CHECKING:
    from liz.llm.client import LLMClient

__all__ = [
    "NO_ANSWER",
    "SCRIPTED_BASE_URL",
    "Answer",
    "RecordedRequest",
    "Responder",
    "ScriptedCall",
    "ScriptedError",
    "ScriptedOpenAI",
    "ToolCalls",
    "call_tool",
    "call_tools",
    "scripted_embedding",
]

NO_ANSWER = "ScriptedOpenAI has no answer queued; call reply() or respond_with()"
SCRIPTED_BASE_URL = "http://scripted/v1"


class ScriptedOpenAI:
    """An OpenAI-compatible server whose chat answers are scripted by the test."""

    def __init__(self, *, embedding_dim: int = 64, stream_pause: float = 0.0) -> None:
        """``stream_pause``: seconds between the chunks of a streamed answer, as a real
        model writes them (0: all at once, which a client may read as one piece)."""
        self.embedding_dim = embedding_dim
        self.stream_pause = stream_pause
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._answers: deque[Answer] = deque()
        self._failures: deque[ScriptedError] = deque()
        self._responder: Responder | None = None
        self._cached_tokens: int | None = None
        self._ids = itertools.count(1)
        # What an OpenAI-style prompt cache would serve of each chat request's prompt.
        self.prefix_cache = PrefixCache()
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
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

    def report_cached_tokens(self, tokens: int | None) -> None:
        """Say in every chat answer's usage that ``tokens`` of its prompt (at most all of
        it) came from the prompt cache (``prompt_tokens_details.cached_tokens``); None: not."""
        with self._lock:
            self._cached_tokens = tokens

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
            http_client=cast(Any, httpx.AsyncClient(transport=transport)),
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
        with serve_in_thread(self.app, name="scripted-openai") as root:
            yield f"{root}/v1"

    # -- endpoints -------------------------------------------------------------------

    async def _chat(self, request: Request) -> Response:
        recorded, refusal = await self._receive(request)
        if refusal is not None:
            return refusal
        body = recorded.body
        if not isinstance(body.get("model"), str) or not recorded.messages:
            return error_response(
                400, "'model' (a string) and 'messages' (a non-empty list) are required"
            )
        answer = await self._next_answer(recorded)
        if answer is None:
            # A missing script is a test bug: tell the SDK not to retry it.
            return error_response(500, NO_ANSWER, headers={"x-should-retry": "false"})
        if isinstance(answer, ScriptedError):
            return error_response(answer.status, answer.message, answer.retry_after)
        content = as_content(answer)
        completion_id = f"chatcmpl-scripted-{next(self._ids)}"
        prompt = prompt_tokens(body)
        cached = self.prefix_cache.cached_tokens(body["model"], body)
        if self._cached_tokens is not None:  # report_cached_tokens: at most the whole prompt
            cached = min(self._cached_tokens, prompt)
        token_usage = usage(prompt, cached, content)
        calls = tool_call_items(completion_id, answer) if isinstance(answer, ToolCalls) else None
        if not recorded.stream:
            return JSONResponse(
                completion_body(completion_id, body["model"], content, token_usage, calls)
            )
        chunks = stream_chunks(completion_id, body["model"], content, calls)
        options = body.get("stream_options") or {}
        if isinstance(options, dict) and options.get("include_usage"):
            chunks.append(chunk(completion_id, body["model"], [], token_usage))
        events = server_sent_events(chunks, pause=self.stream_pause)
        return StreamingResponse(events, media_type="text/event-stream")

    async def _embeddings(self, request: Request) -> Response:
        recorded, refusal = await self._receive(request)
        if refusal is not None:
            return refusal
        body = recorded.body
        texts = recorded.inputs
        if not isinstance(body.get("model"), str) or not texts:
            return error_response(
                400, "'model' (a string) and 'input' (text or a list of texts) are required"
            )
        if not all(isinstance(text, str) and text for text in texts):
            return error_response(
                400, "'input' must hold non-empty strings (ScriptedOpenAI embeds text only)"
            )
        dimensions = body.get("dimensions") or self.embedding_dim
        if not isinstance(dimensions, int) or dimensions < 1:
            return error_response(400, "'dimensions' must be a positive integer")
        as_base64 = body.get("encoding_format") == "base64"
        return JSONResponse(embeddings_body(texts, body["model"], dimensions, as_base64=as_base64))

    async def _models(self, request: Request) -> Response:
        with self._lock:
            self._requests.append(RecordedRequest.of(request, {}))
        names = ["scripted-small", "scripted-large", "scripted-embedding"]
        models = [
            {"id": name, "object": "model", "created": 0, "owned_by": "liz"} for name in names
        ]
        return JSONResponse({"object": "list", "data": models})

    async def _receive(self, request: Request) -> tuple[RecordedRequest, Response | None]:
        """Record the request; a response when it must fail (bad JSON or a scripted failure)."""
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        recorded = RecordedRequest.of(request, body if isinstance(body, dict) else {})
        with self._lock:
            self._requests.append(recorded)
            failure = self._failures.popleft() if self._failures else None
        if failure is not None:
            return recorded, error_response(failure.status, failure.message, failure.retry_after)
        if not isinstance(body, dict):
            return recorded, error_response(400, "the request body must be a JSON object")
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
