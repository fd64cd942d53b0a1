"""A collector that is down: ``liz serve`` says so once, not every batch, and stops promptly.

Real ``liz serve`` processes (scripted model) exporting to a loopback port nobody listens on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.serve_process import free_port

pytestmark = pytest.mark.slow

NO_LLM = {"OPENAI_API_KEY": "", "OPENROUTER_API_KEY": "", "OPENAI_BASE_URL": ""}
# The old SDK exit hook waited for every retry: 13 s with a dead collector. A stop that
# hangs fails here; how fast it stops is measured, not asserted (bench/observe.py).
STOPPED_WITHIN = 10.0


@contextmanager
def serving(tmp_path: Path, otel: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    env = {
        **os.environ,
        **NO_LLM,
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'traced.db'}",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}",  # nobody listens
        **otel,
    }
    command = [sys.executable, "-m", "liz", "serve", "--scripted"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "serve.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=output, stderr=subprocess.STDOUT
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while not _healthy(url):
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            yield url, process
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def say(url: str, text: str) -> None:
    body = {"input": {"agentId": "business-advisor", "userId": "ann", "text": text}}
    assert httpx.post(f"{url}/agent/input", json=body, timeout=30).status_code == 200


def stop(process: subprocess.Popen[bytes], tmp_path: Path) -> None:
    """SIGTERM, as a process manager stops a server; uvicorn ends by raising it again."""
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=STOPPED_WITHIN) in (0, -signal.SIGTERM)
    assert "Finished server process" in (tmp_path / "serve.log").read_text()


def tracing_lines(tmp_path: Path) -> list[str]:
    lines = (tmp_path / "serve.log").read_text().splitlines()
    return [line for line in lines if "spans" in line or "export" in line.lower()]


def test_a_dead_collector_is_logged_once_not_every_batch(tmp_path: Path) -> None:
    # Batches every 100 ms, each given up on quickly: several fail while the turns run.
    otel = {"OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_EXPORTER_OTLP_TIMEOUT": "0.3"}
    with serving(tmp_path, otel) as (url, process):
        for number in range(4):
            say(url, f"Message {number}")
            time.sleep(0.4)
        stop(process, tmp_path)
    lines = tracing_lines(tmp_path)
    reported = [line for line in lines if "are not reaching" in line]
    assert len(reported) == 1, lines
    assert "127.0.0.1" in reported[0] and "/v1/traces" in reported[0]
    assert not [line for line in lines if " opentelemetry." in line]  # the SDK's own lines


def test_sigterm_with_a_dead_collector_stops_the_server_promptly(tmp_path: Path) -> None:
    # The SDK's defaults: each batch retried for 10 s; the last spans wait in the queue.
    with serving(tmp_path, {}) as (url, process):
        say(url, "Hello")
        began = time.monotonic()
        stop(process, tmp_path)
        took = time.monotonic() - began
    lines = tracing_lines(tmp_path)
    assert [line for line in lines if "tracing stopped" in line], lines
    assert not [line for line in lines if " opentelemetry." in line]  # the SDK's own lines
    print(f"SIGTERM to exit with a dead collector: {took:.2f} s")


def test_a_full_span_queue_is_said_in_one_line_not_one_per_span(tmp_path: Path) -> None:
    # A queue of two spans behind a batch retried for seconds: most of the turns' spans
    # are dropped, and the SDK logs a line for each one.
    otel = {
        "OTEL_BSP_MAX_QUEUE_SIZE": "2",
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "5",
    }
    with serving(tmp_path, otel) as (url, process):
        for number in range(4):
            say(url, f"Message {number}")
        stop(process, tmp_path)
    lines = (tmp_path / "serve.log").read_text().splitlines()
    said = [line for line in lines if "the span queue is full" in line]
    assert len(said) == 1, lines
    assert not [line for line in lines if "Queue full" in line]
