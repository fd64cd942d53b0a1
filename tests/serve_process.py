"""The ``liz`` command as real processes, for end-to-end tests: one-shot runs, and
``liz serve`` on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def run_liz(
    *args: str, env: dict[str, str], cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run ``liz ARGS`` to its end with ``env`` over this environment."""
    return subprocess.run(
        [sys.executable, "-m", "liz", *args],
        cwd=cwd,
        env={**os.environ, **env},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def liz_serve(
    env: dict[str, str],
    cwd: Path,
    *,
    target: str | None = None,
    migrate: bool = True,
    timeout: float = 60,
    flags: tuple[str, ...] = (),
) -> Iterator[str]:
    """Run ``liz serve [target] [flags]`` until the block ends; yields its base URL."""
    port = free_port()
    command = [sys.executable, "-m", "liz", "serve", *([target] if target else []), *flags]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    if not migrate:
        command.append("--no-migrate")
    log = cwd / f"serve-{port}.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=cwd, env={**os.environ, **env}, stdout=output, stderr=subprocess.STDOUT
        )
        base_url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"liz serve exited early:\n{log.read_text()}")
                try:
                    if httpx.get(f"{base_url}/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"liz serve did not start:\n{log.read_text()}")
                time.sleep(0.1)
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
