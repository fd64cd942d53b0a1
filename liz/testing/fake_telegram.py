"""A fake Telegram Bot API server, for testing bots without Telegram.

``FakeTelegram`` is a small Starlette app that answers ``/bot{token}/{method}`` as
the Bot API does, in its wire format: ``getMe``, ``getUpdates`` (offsets confirm
and drop earlier updates; ``timeout`` long-polls), ``sendMessage``,
``sendChatAction``, ``setWebhook``/``deleteWebhook``, with bodies as JSON,
form-urlencoded or multipart form data, as the client libraries send them. A
wrong token gets 401; ``rate_limit(method, seconds)`` makes the next call of a
method get 429 with ``parameters.retry_after``; two ``getUpdates`` at once get 409,
as Telegram answers. Messages people write are added with :meth:`FakeTelegram.say`;
the server computes their entities (commands, @mentions) as Telegram does.

Example::

    telegram = FakeTelegram(token="123:abc", username="liz_bot")
    telegram.say("hello", user_id=7)                   # a private chat
    telegram.say("@liz_bot hi", user_id=8, chat_id=-100, chat_type="group")
    with telegram.serve() as api_url:                  # TELEGRAM_API_URL=api_url
        ...
    assert telegram.sent[0].text
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from liz.testing.threaded_server import serve_in_thread

_COMMAND = re.compile(r"^/[A-Za-z0-9_]+(?:@[A-Za-z0-9_]+)?")
_MENTION = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{3,}")
# Parameters the Bot API takes as JSON objects or arrays; in a form body they are JSON text.
_STRUCTURED = {"reply_parameters", "allowed_updates", "reply_markup", "entities"}


@dataclass(frozen=True)
class SentMessage:
    """A message the bot sent, as the fake received it."""

    chat_id: int
    text: str
    message_id: int
    reply_to: int | None
    content_type: str  # the request body's form: application/json, multipart/form-data...
    at: float = field(default_factory=time.monotonic)  # when the fake took it


@dataclass
class Call:
    """One Bot API call the fake answered."""

    method: str
    params: dict[str, Any]
    status: int
    content_type: str


class FakeTelegram:
    """A Bot API server for one bot; thread-safe (``serve()`` runs it in its own thread)."""

    def __init__(
        self,
        *,
        token: str = "123456:TEST-token",
        username: str = "liz_test_bot",
        first_name: str = "Liz",
    ) -> None:
        self.token = token
        self.bot_id = int(token.split(":", 1)[0])
        self.username = username
        self.first_name = first_name
        self.sent: list[SentMessage] = []
        self.calls: list[Call] = []
        self.conflicts = 0
        self._updates: list[dict[str, Any]] = []
        self._confirmed = 0  # every update id up to here was confirmed by an offset
        self._rate_limits: dict[str, list[float]] = {}
        self._polling = 0  # getUpdates calls waiting now
        self._lock = threading.Lock()
        self._update_ids = itertools.count(1000)
        self._message_ids = itertools.count(1)
        self.app = Starlette(
            routes=[
                Route("/bot{token}/{method}", self._endpoint, methods=["GET", "POST"]),
            ]
        )

    # -- what people do ----------------------------------------------------------------

    def say(
        self,
        text: str | None,
        *,
        user_id: int = 1001,
        first_name: str = "Ada",
        chat_id: int | None = None,
        chat_type: str = "private",
        reply_to_bot: bool = False,
        caption: str | None = None,
        media: str | None = None,
    ) -> int:
        """A person writes ``text`` (or sends ``media``, e.g. "sticker", "photo", with an
        optional ``caption``); the update's id. ``chat_id`` defaults to the user's private
        chat."""
        chat = chat_id if chat_id is not None else user_id
        message: dict[str, Any] = {
            "message_id": next(self._message_ids),
            "date": int(time.time()),
            "chat": {"id": chat, "type": chat_type}
            | ({"first_name": first_name} if chat_type == "private" else {"title": "A group"}),
            "from": {"id": user_id, "is_bot": False, "first_name": first_name},
        }
        if text is not None:
            message["text"] = text
            if entities := _entities(text):
                message["entities"] = entities
        if media == "photo":
            message["photo"] = [
                {"file_id": "photo-1", "file_unique_id": "p1", "width": 90, "height": 90}
            ]
        elif media == "sticker":
            message["sticker"] = {
                "file_id": "sticker-1",
                "file_unique_id": "s1",
                "type": "regular",
                "width": 512,
                "height": 512,
                "is_animated": False,
                "is_video": False,
            }
        elif media == "voice":
            message["voice"] = {"file_id": "voice-1", "file_unique_id": "v1", "duration": 2}
        if caption is not None:
            message["caption"] = caption
            if entities := _entities(caption):
                message["caption_entities"] = entities
        if reply_to_bot:
            message["reply_to_message"] = {
                "message_id": 1,
                "date": int(time.time()),
                "chat": message["chat"],
                "from": self._me(),
                "text": "an earlier answer",
            }
        with self._lock:
            update_id = next(self._update_ids)
            self._updates.append({"update_id": update_id, "message": message})
        return update_id

    def take_updates(self) -> list[dict[str, Any]]:
        """Remove and return the waiting updates: what Telegram would POST to a webhook."""
        with self._lock:
            taken, self._updates = self._updates, []
        return taken

    def rate_limit(self, method: str, retry_after: float = 1) -> None:
        """The next call of ``method`` gets 429 with ``retry_after`` (whole seconds)."""
        with self._lock:
            self._rate_limits.setdefault(method, []).append(retry_after)

    def sent_to(self, chat_id: int) -> list[str]:
        """The texts the bot sent to a chat, in order."""
        with self._lock:
            return [message.text for message in self.sent if message.chat_id == chat_id]

    def pending(self) -> int:
        """Updates not confirmed by the bot yet."""
        with self._lock:
            return sum(1 for u in self._updates if u["update_id"] > self._confirmed)

    def polling(self) -> bool:
        """Whether a ``getUpdates`` call is waiting for updates now (a long poll)."""
        with self._lock:
            return self._polling > 0

    @contextmanager
    def serve(self) -> Iterator[str]:
        """Serve over real HTTP on 127.0.0.1 in a thread; yields the API root
        (``TELEGRAM_API_URL``)."""
        with serve_in_thread(self.app, name="fake-telegram") as root:
            yield root

    # -- the Bot API -------------------------------------------------------------------

    async def _endpoint(self, request: Request) -> Response:
        method = request.path_params["method"]
        params = await _params(request)
        content_type = request.headers.get("content-type", "").split(";")[0]
        try:
            if request.path_params["token"] != self.token:
                raise _Refused(401, "Unauthorized")
            with self._lock:
                waits = self._rate_limits.get(method)
                retry_after = int(waits.pop(0)) if waits else None
            if retry_after is not None:
                raise _Refused(
                    429,
                    f"Too Many Requests: retry after {retry_after}",
                    {"retry_after": retry_after},
                )
            handler = {
                "getMe": self._get_me,
                "getUpdates": self._get_updates,
                "sendMessage": self._send_message,
                "sendChatAction": self._true,
                "setWebhook": self._true,
                "deleteWebhook": self._true,
                "close": self._true,
            }.get(method)
            if handler is None:
                raise _Refused(404, "Not Found")
            status, body = 200, {"ok": True, "result": await handler(params, content_type)}
        except _Refused as refused:
            status = refused.status
            body = {"ok": False, "error_code": status, "description": refused.description}
            if refused.parameters is not None:
                body["parameters"] = refused.parameters
        with self._lock:
            self.calls.append(Call(method, params, status, content_type))
        return JSONResponse(body, status_code=status)

    def _me(self) -> dict[str, Any]:
        return {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": self.first_name,
            "username": self.username,
        }

    async def _get_me(self, params: dict[str, Any], content_type: str) -> Any:
        return self._me() | {"can_join_groups": True, "can_read_all_group_messages": False}

    async def _true(self, params: dict[str, Any], content_type: str) -> Any:
        return True

    async def _get_updates(self, params: dict[str, Any], content_type: str) -> Any:
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)
        limit = int(params.get("limit") or 100)
        with self._lock:
            if self._polling:
                self.conflicts += 1
                raise _Refused(
                    409,
                    "Conflict: terminated by other getUpdates request; make sure that "
                    "only one bot instance is running",
                )
            self._polling += 1
        try:
            deadline = time.monotonic() + timeout
            while True:
                with self._lock:
                    if offset:
                        # An offset confirms every earlier update: Telegram forgets them.
                        self._confirmed = max(self._confirmed, offset - 1)
                        self._updates = [u for u in self._updates if u["update_id"] >= offset]
                    found = [u for u in self._updates if u["update_id"] >= offset][:limit]
                if found or time.monotonic() >= deadline:
                    return found
                await asyncio.sleep(0.02)
        finally:
            with self._lock:
                self._polling -= 1

    async def _send_message(self, params: dict[str, Any], content_type: str) -> Any:
        text = str(params.get("text") or "")
        if not text.strip():
            raise _Refused(400, "Bad Request: message text is empty")
        if _utf16(text) > 4096:
            raise _Refused(400, "Bad Request: message is too long")
        chat_id = int(params["chat_id"])
        reply = params.get("reply_parameters") or {}
        reply_to = reply.get("message_id") if isinstance(reply, dict) else None
        with self._lock:
            message_id = next(self._message_ids)
            self.sent.append(SentMessage(chat_id, text, message_id, reply_to, content_type))
        return {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
            "from": self._me(),
            "text": text,
        }


class _Refused(Exception):
    """A call the Bot API answers with an error."""

    def __init__(
        self, status: int, description: str, parameters: dict[str, Any] | None = None
    ) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters


async def _params(request: Request) -> dict[str, Any]:
    """A call's parameters from its query, or its JSON, form or multipart body."""
    params: dict[str, Any] = dict(request.query_params)
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        body = await request.body()
        if body:
            params.update(json.loads(body))
        return params
    if content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        form = await request.form()
        for key, value in form.items():
            if not isinstance(value, str):
                value = (await value.read()).decode("utf-8", "replace")
            params[key] = value
    for key in _STRUCTURED & params.keys():
        if isinstance(params[key], str):
            params[key] = json.loads(params[key])
    return params


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _entities(text: str) -> list[dict[str, Any]]:
    """Commands and @mentions, with offsets in UTF-16 units as Telegram counts them."""
    found = []
    if command := _COMMAND.match(text):
        found.append({"type": "bot_command", "offset": 0, "length": _utf16(command[0])})
    for mention in _MENTION.finditer(text):
        found.append(
            {
                "type": "mention",
                "offset": _utf16(text[: mention.start()]),
                "length": _utf16(mention[0]),
            }
        )
    return found
