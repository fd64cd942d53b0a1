"""A fake Discord speaking Discord's wire format, for discord.py itself to talk to.

The REST API (``/api/v10``) and the gateway (a WebSocket sending HELLO, READY,
heartbeat ACKs and MESSAGE_CREATE dispatches) are one Starlette app served over TLS
with a self-signed certificate. discord.py reaches it through a public seam: the
aiohttp connector a ``discord.Client`` takes, here one whose resolver sends
discord.com and gateway.discord.gg to this server, without certificate checks.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import WSMsgType, web
from aiohttp.abc import AbstractResolver, ResolveResult
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

TOKEN = "fake-discord-token"
MESSAGE_CONTENT_INTENT = 1 << 15
GATEWAY_MESSAGE_CONTENT = 1 << 18


@dataclass(frozen=True)
class Posted:
    """A message the bot posted: the REST body as Discord received it."""

    channel_id: int
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)  # when the fake took it


def _user(user_id: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": str(user_id),
        "username": name,
        "discriminator": "0",
        "global_name": name.title(),
        "avatar": None,
        "bot": bot,
    }


class DiscordServer:
    """One bot's Discord: its token, its application's intents, its channels."""

    def __init__(self, *, bot_id: int = 4242, username: str = "liz_bot", content: bool = True):
        self.bot = _user(bot_id, username, bot=True)
        self.bot_id = bot_id
        self.content = content  # the portal's Message Content intent
        self.posted: list[Posted] = []
        # enforce_nonce: what a nonce posted, for a repeat to get back.
        self._by_nonce: dict[str, dict[str, Any]] = {}
        self.typing: list[int] = []
        self.identified: list[int] = []  # the intents of each IDENTIFY
        # Each channel's messages (REST payloads), and its server (None: a DM).
        self.history: dict[int, list[dict[str, Any]]] = {}
        self.servers: dict[int, int | None] = {}
        self._ids = itertools.count(1_100_000_000_000_000_000)
        self._sockets: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[dict[str, Any]]]] = []
        self._lock = threading.Lock()
        self._seq = itertools.count(2)

    def say(
        self,
        text: str,
        *,
        user_id: int,
        channel_id: int,
        guild_id: int | None = None,
        mention_bot: bool = False,
        reply_to_bot: bool = False,
    ) -> int:
        """Someone writes in a channel; the gateway pushes it. Its message id."""
        message_id = next(self._ids)
        author = _user(user_id, f"person{user_id}")
        content = f"<@{self.bot_id}> {text}" if mention_bot else text
        data: dict[str, Any] = {
            "id": str(message_id),
            "channel_id": str(channel_id),
            "author": author,
            "content": content if self.content or mention_bot or guild_id is None else "",
            "timestamp": dt.datetime.now(dt.UTC).isoformat(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [self.bot] if mention_bot else [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
        }
        if guild_id is not None:
            data["guild_id"] = str(guild_id)
        if reply_to_bot:
            earlier = next(self._ids)
            data["type"] = 19
            data["message_reference"] = {"message_id": str(earlier), "channel_id": str(channel_id)}
            data["referenced_message"] = {
                **data,
                "id": str(earlier),
                "author": self.bot,
                "content": "an earlier answer",
                "type": 0,
                "mentions": [],
            }
            data["referenced_message"].pop("message_reference")
            data["referenced_message"].pop("referenced_message", None)
        self.history.setdefault(channel_id, []).append(
            {key: value for key, value in data.items() if key != "guild_id"}
        )
        self.servers[channel_id] = guild_id
        self._push({"op": 0, "t": "MESSAGE_CREATE", "d": data})
        return message_id

    def connected(self) -> bool:
        with self._lock:
            return bool(self._sockets)

    def _push(self, event: dict[str, Any]) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for loop, queue in sockets:
            loop.call_soon_threadsafe(queue.put_nowait, event)

    # The REST API

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("authorization") == f"Bot {TOKEN}"

    async def _me(self, request: web.Request) -> web.StreamResponse:
        if not self._authorized(request):
            return _json({"message": "401: Unauthorized", "code": 0}, status=401)
        return _json(self.bot)

    async def _application(self, request: web.Request) -> web.StreamResponse:
        return _json(
            {
                "id": str(self.bot_id),
                "name": self.bot["username"],
                "icon": None,
                "description": "",
                "rpc_origins": [],
                "bot_public": True,
                "bot_require_code_grant": False,
                "owner": _user(1, "owner"),
                "summary": "",
                "verify_key": "0" * 64,
                "team": None,
                "flags": GATEWAY_MESSAGE_CONTENT if self.content else 0,
            }
        )

    async def _post(self, request: web.Request) -> web.StreamResponse:
        channel_id = int(request.match_info["channel"])
        body = json.loads(await request.read())
        nonce = body.get("nonce") if body.get("enforce_nonce") else None
        with self._lock:
            if nonce is not None and nonce in self._by_nonce:  # the first message back
                return _json(self._by_nonce[nonce])
            message = self._message(channel_id, body)
            self.posted.append(Posted(channel_id, body))
            if nonce is not None:
                self._by_nonce[nonce] = message
        return _json(message)

    def _message(self, channel_id: int, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": str(next(self._ids)),
            "channel_id": str(channel_id),
            "author": self.bot,
            "content": body.get("content", ""),
            "timestamp": dt.datetime.now(dt.UTC).isoformat(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
        }

    async def _channel(self, request: web.Request) -> web.StreamResponse:
        channel_id = int(request.match_info["channel"])
        if channel_id not in self.servers:
            return _json({"message": "Unknown Channel", "code": 10003}, status=404)
        server = self.servers[channel_id]
        if server is None:
            return _json({"id": str(channel_id), "type": 1, "recipients": [_user(8, "person8")]})
        return _json(
            {
                "id": str(channel_id),
                "type": 0,
                "guild_id": str(server),
                "name": "general",
                "position": 0,
                "permission_overwrites": [],
            }
        )

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        """A channel's messages after ``after``: the oldest ``limit`` of them, newest first."""
        channel_id = int(request.match_info["channel"])
        after = int(request.query.get("after", "0"))
        limit = int(request.query.get("limit", "50"))
        later = [m for m in self.history.get(channel_id, []) if int(m["id"]) > after]
        return _json(list(reversed(sorted(later, key=lambda m: int(m["id"]))[:limit])))

    async def _typing(self, request: web.Request) -> web.StreamResponse:
        self.typing.append(int(request.match_info["channel"]))
        return web.Response(status=204)

    # The gateway

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        websocket = web.WebSocketResponse()
        await websocket.prepare(request)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        entry = (asyncio.get_running_loop(), queue)
        await websocket.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 41250}}))
        sender = asyncio.create_task(self._send_events(websocket, queue))
        try:
            async for received in websocket:
                if received.type != WSMsgType.TEXT:
                    continue
                frame = json.loads(received.data)
                if frame["op"] == 1:  # heartbeat
                    await websocket.send_str(json.dumps({"op": 11}))
                elif frame["op"] == 2:  # identify
                    intents = int(frame["d"]["intents"])
                    self.identified.append(intents)
                    if intents & MESSAGE_CONTENT_INTENT and not self.content:
                        await websocket.close(code=4014)
                        break
                    await websocket.send_str(json.dumps(self._ready()))
                    with self._lock:
                        self._sockets.append(entry)
        finally:
            with self._lock:
                if entry in self._sockets:
                    self._sockets.remove(entry)
            sender.cancel()
        return websocket

    async def _send_events(
        self, websocket: web.WebSocketResponse, queue: asyncio.Queue[dict[str, Any]]
    ) -> None:
        while True:
            event = await queue.get()
            await websocket.send_str(json.dumps({**event, "s": next(self._seq)}))

    def _ready(self) -> dict[str, Any]:
        return {
            "op": 0,
            "t": "READY",
            "s": 1,
            "d": {
                "v": 10,
                "user": self.bot,
                "guilds": [],
                "session_id": "fake-session",
                "resume_gateway_url": "wss://gateway.discord.gg",
                "application": {"id": str(self.bot_id), "flags": 0},
            },
        }

    def app(self) -> web.Application:
        base = "/api/v10"
        app = web.Application()
        app.router.add_get(f"{base}/users/@me", self._me)
        app.router.add_get(f"{base}/oauth2/applications/@me", self._application)
        app.router.add_post(f"{base}/channels/{{channel}}/messages", self._post)
        app.router.add_post(f"{base}/channels/{{channel}}/typing", self._typing)
        app.router.add_get(f"{base}/channels/{{channel}}", self._channel)
        app.router.add_get(f"{base}/channels/{{channel}}/messages", self._messages)
        app.router.add_get("/", self._gateway)
        return app

    @contextmanager
    def serve(self, directory: Path) -> Iterator[Callable[[], aiohttp.BaseConnector]]:
        """Serve over TLS in a thread; what makes connectors that reach this server."""
        with self._serving(directory) as (port, _proxy, _cert):
            yield lambda: aiohttp.TCPConnector(resolver=_ToHere(port), ssl=False)

    @contextmanager
    def serve_behind_proxy(self, directory: Path) -> Iterator[tuple[str, Path]]:
        """Serve over TLS in a thread for another process: yields the URL of an HTTP
        proxy that takes every host to this server (``DISCORD_PROXY``), and the
        certificate to trust for discord.com and gateway.discord.gg (``SSL_CERT_FILE``)."""
        with self._serving(directory) as (_port, proxy, cert):
            yield proxy, cert

    @contextmanager
    def _serving(self, directory: Path) -> Iterator[tuple[int, str, Path]]:
        cert, key = _self_signed(directory)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        loop = asyncio.new_event_loop()
        runner = web.AppRunner(self.app())
        started = threading.Event()
        proxy_port: list[int] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", port, ssl_context=context)
            loop.run_until_complete(site.start())
            proxy = loop.run_until_complete(asyncio.start_server(_tunnel_to(port), "127.0.0.1", 0))
            proxy_port.append(int(proxy.sockets[0].getsockname()[1]))
            started.set()
            loop.run_forever()
            proxy.close()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        thread = threading.Thread(target=run, name="fake-discord", daemon=True)
        thread.start()
        if not started.wait(20):
            raise RuntimeError("the fake Discord did not start")
        try:
            yield port, f"http://127.0.0.1:{proxy_port[0]}", cert
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)


def _tunnel_to(port: int) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]:
    """An HTTP proxy's CONNECT, for any host: the tunnel leads to the fake's own port."""

    async def tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")  # CONNECT discord.com:443 HTTP/1.1 ...
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
        except (OSError, asyncio.IncompleteReadError):
            writer.close()
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await asyncio.gather(
            _pipe(reader, upstream_writer), _pipe(upstream_reader, writer), return_exceptions=True
        )

    return tunnel


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    finally:
        writer.close()


def _json(data: object, *, status: int = 200) -> web.Response:
    # Exactly Discord's content type: discord.py decodes JSON only for this one.
    body = json.dumps(data).encode()
    return web.Response(body=body, status=status, headers={"Content-Type": "application/json"})


class _ToHere(AbstractResolver):
    """Every host name resolves to the fake server."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            {
                "hostname": host,
                "host": "127.0.0.1",
                "port": self.port,
                "family": socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        pass


def _self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "discord.com")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("discord.com"), x509.DNSName("gateway.discord.gg")]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "discord.pem", directory / "discord.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path
