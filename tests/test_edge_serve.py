"""The edge through a real ``liz serve`` process: a 300 MiB chunked body is refused early,
and every answer carries a request id."""

from __future__ import annotations

import select
import socket
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from liz.testing.openai_server import ScriptedOpenAI
from tests.serve_process import liz_serve

pytestmark = pytest.mark.slow

TOTAL = 300 * 1024 * 1024
CHUNK = b" " * 65_536


def send_chunked(url: str, total: int) -> tuple[bytes, int]:
    """Stream a chunked body of ``total`` bytes until the server answers; (answer, bytes sent)."""
    parts = urlsplit(url)
    sent, framed = 0, b"%x\r\n" % len(CHUNK) + CHUNK + b"\r\n"
    with socket.create_connection((parts.hostname, parts.port)) as sock:
        sock.sendall(
            b"POST /agent/input HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        while sent < total:
            readable, writable, _ = select.select([sock], [sock], [], 30)
            if readable or not writable:
                break
            try:
                sock.sendall(framed)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(CHUNK)
        sock.settimeout(30)
        answer = b""
        try:
            while chunk := sock.recv(65_536):  # until the server closes the connection
                answer += chunk
        except ConnectionResetError:  # closed with our unread chunks still in its buffer
            pass
        return answer, sent


def test_a_300_mib_chunked_body_is_refused_without_being_read(tmp_path: Path) -> None:
    with ScriptedOpenAI().serve() as llm_url:
        env = {
            "OPENAI_BASE_URL": llm_url,
            "OPENAI_API_KEY": "test",
            "DATABASE_URL": f"file:{tmp_path / 'e2e.db'}",
        }
        with liz_serve(env, tmp_path) as url:
            answer, sent = send_chunked(url, TOTAL)
            health = httpx.get(f"{url}/health", timeout=10)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b"larger than 1000000 bytes" in answer
    assert b"x-request-id: " in answer.lower()
    # The server stopped reading after the first megabyte; socket buffers hold a few more.
    assert sent < 64 * 1024 * 1024
    assert health.status_code == 200 and health.headers["x-request-id"]
