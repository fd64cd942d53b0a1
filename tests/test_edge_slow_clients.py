"""A served process against clients that hold connections (raw sockets on ``liz serve``): one
that trickles its headers is closed after LIZ_HEADER_TIMEOUT, one that trickles its body after
LIZ_BODY_TIMEOUT, and a request on a connection past LIZ_MAX_CONNECTIONS is answered 503 and
closed, while the server goes on serving."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.serve_process import liz_serve

pytestmark = pytest.mark.slow
HEADER_TIMEOUT = 1.0
BODY_TIMEOUT = 1.0
MAX_CONNECTIONS = 12
# Far longer than the header timeout: a connection still open then was never closed.
GIVE_UP = 20.0


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cwd = tmp_path_factory.mktemp("slow-clients")
    env = {
        "DATABASE_URL": f"sqlite+aiosqlite:///{cwd}/liz.db",
        "LIZ_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
        "LIZ_BODY_TIMEOUT": str(BODY_TIMEOUT),
        "LIZ_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
    }
    with liz_serve(env, cwd) as url:
        yield url


def connect(base_url: str) -> socket.socket:
    parts = urlsplit(base_url)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.settimeout(GIVE_UP)
    return sock


def until_closed(sock: socket.socket, trickle: bytes = b"") -> bytes:
    """Send ``trickle`` a byte at a time (one every tenth of a second) until the server
    closes the connection; what it answered."""
    answer = b""
    deadline = time.monotonic() + GIVE_UP
    sock.setblocking(False)
    sent = 0
    while time.monotonic() < deadline:
        if trickle:
            try:
                sock.send(trickle[sent % len(trickle) : sent % len(trickle) + 1])
                sent += 1
            except (BrokenPipeError, ConnectionResetError):
                return answer
        try:
            chunk = sock.recv(65_536)
        except BlockingIOError:
            time.sleep(0.1)
            continue
        except ConnectionResetError:
            return answer
        if not chunk:
            return answer
        answer += chunk
    raise AssertionError(f"the connection was still open after {GIVE_UP} s")


def test_a_connection_trickling_its_headers_is_closed_with_a_408(base_url: str) -> None:
    with connect(base_url) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
        answer = until_closed(sock, trickle=b"X-Slow: aaaaaaaaaaaaaaaaaaaaa\r\n")
    assert answer.startswith(b"HTTP/1.1 408 ")


def test_a_client_still_sending_after_the_header_deadline_can_read_the_408(
    base_url: str,
) -> None:
    # A server that closes at once, with the client's bytes unread, answers them with a
    # reset: the client's next send fails and the 408 is lost.
    with connect(base_url) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: a")
        time.sleep(HEADER_TIMEOUT + 0.5)
        sock.sendall(b"a" * 100)
        time.sleep(0.2)
        sock.sendall(b"a" * 100)
        time.sleep(0.2)
        assert sock.recv(65_536).startswith(b"HTTP/1.1 408 ")


def test_a_connection_trickling_its_body_is_answered_408_and_closed(base_url: str) -> None:
    body = b'{"input": {"agentId": "business-advisor", "userId": "u1", "text": "' + b"a" * 400
    with connect(base_url) as sock:
        sock.sendall(
            b"POST /agent/input HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nContent-Length: 10000\r\n\r\n"
        )
        answer = until_closed(sock, trickle=body)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"LIZ_BODY_TIMEOUT" in answer
    # The server goes on serving.
    assert httpx.get(f"{base_url}/health", timeout=10).status_code == 200


def test_a_connection_that_sends_nothing_is_closed(base_url: str) -> None:
    with connect(base_url) as sock:
        assert until_closed(sock).startswith(b"HTTP/1.1 408 ")


def test_a_slow_next_request_on_a_kept_alive_connection_is_closed_too(base_url: str) -> None:
    with connect(base_url) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert sock.recv(65_536).startswith(b"HTTP/1.1 200 ")
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        answer = until_closed(sock, trickle=b"X-Slow: aaaaaaaaaaaaaaaaaaaaa\r\n")
    assert b"HTTP/1.1 408 " in answer


def test_connections_past_the_limit_are_refused_cleanly_and_serving_resumes(
    base_url: str,
) -> None:
    held = [connect(base_url) for _ in range(MAX_CONNECTIONS)]
    try:
        for sock in held:
            sock.sendall(b"GET /health HTTP/1.1\r\n")  # never finished
        time.sleep(0.2)
        with connect(base_url) as extra:
            extra.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            answer = until_closed(extra)
        assert answer.startswith(b"HTTP/1.1 503 ")
        for sock in held:  # each is closed by the header timeout
            assert until_closed(sock).startswith(b"HTTP/1.1 408 ")
    finally:
        for sock in held:
            sock.close()
    assert httpx.get(f"{base_url}/health", timeout=10).status_code == 200


def test_a_whole_request_is_served_as_before(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=10) as client:
        for _ in range(3):  # kept alive between them
            assert client.get("/health").status_code == 200
