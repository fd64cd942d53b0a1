"""Serve an ASGI app over real HTTP on 127.0.0.1, in a thread, for as long as a test needs it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

STARTUP_TIMEOUT = 10.0


@contextmanager
def serve_in_thread(app: ASGIApp, *, name: str = "liz-test-server") -> Iterator[str]:
    """Run ``app`` on a free port; yields its root URL (``http://127.0.0.1:PORT``).

    On exit the server stops and the port is closed.
    """
    # IPPROTO_TCP named: asyncio turns Nagle off only on sockets that say TCP, and with
    # Nagle on, each answer on a kept-alive connection waits for the client's delayed ACK.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    # log_config=None: a test double must not reconfigure the process's logging.
    config = uvicorn.Config(app, log_config=None, lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [listener]}, name=f"{name}-{port}"
    )
    thread.start()
    try:
        _wait_until_started(server, thread, name)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()


def _wait_until_started(server: uvicorn.Server, thread: threading.Thread, name: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if server.started:
            return
        if not thread.is_alive():
            raise RuntimeError(f"{name}: the server thread stopped while starting")
        time.sleep(0.01)
    raise RuntimeError(f"{name} did not start within {STARTUP_TIMEOUT:g} seconds")
