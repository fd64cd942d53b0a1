"""A message's own cost on the Telegram path, beside an HTTP turn on the same agent.

    python bench/telegram_cost.py --messages 200 [--rounds 3]

Both paths run as processes of their own against the scripted LLM (its own process)
on fresh SQLite files: ``liz telegram run`` reading from the fake Bot API (in this
process), and ``liz serve`` taking ``POST /agent/input`` one at a time. What is
measured is the CPU time (user + system) of the liz process per message, from the
first message to the last answer, with fact learning off so that only the turn and
its path are counted. The ratio is the Telegram path's cost to the HTTP turn's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from benchkit import free_port, running
from scripted_server import scripted_server

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from liz.testing.fake_telegram import FakeTelegram

TOKEN = "777:bench-token"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def base_env(llm_url: str, folder: Path, name: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": llm_url,
        "OPENAI_API_KEY": "bench",
        "DATABASE_URL": f"file:{folder / name}.db",
        "LIZ_FACTS_ENABLED": "false",
        "LIZ_LLM_MAX_RETRIES": "0",
    }


def telegram_cost(llm_url: str, folder: Path, messages: int) -> float:
    telegram = FakeTelegram(token=TOKEN)
    with telegram.serve() as api_url:
        env = base_env(llm_url, folder, f"telegram-{time.monotonic_ns()}")
        env |= {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_URL": api_url}
        env["TELEGRAM_POLL_TIMEOUT"] = "25"
        log = folder / "telegram.log"
        command = [sys.executable, "-m", "liz", "telegram", "run", "--agent", "business-advisor"]
        with _polling(command, env, folder, log, telegram) as pid:
            telegram.say("warm up", user_id=1)
            _wait(lambda: len(telegram.sent) == 1)
            before = cpu_seconds(pid)
            for number in range(messages):
                telegram.say(f"message {number}: how do I price a product?", user_id=2 + number)
            _wait(lambda: len(telegram.sent) == messages + 1)
            return (cpu_seconds(pid) - before) / messages


def http_cost(llm_url: str, folder: Path, messages: int) -> float:
    port = free_port()
    env = base_env(llm_url, folder, f"http-{time.monotonic_ns()}")
    command = [sys.executable, "-m", "liz", "serve", "--host", "127.0.0.1", "--port", str(port)]
    url = f"http://127.0.0.1:{port}"
    with (
        running(command, f"{url}/health", folder / "serve.log", env, folder) as process,
        httpx.Client(base_url=url, timeout=60) as client,
    ):

        def say(user: str, text: str) -> None:
            body = {"input": {"agentId": "business-advisor", "userId": user, "text": text}}
            client.post("/agent/input", json=body).raise_for_status()

        say("warm", "warm up")
        before = cpu_seconds(process.pid)
        for number in range(messages):
            say(f"user-{number}", f"message {number}: how do I price a product?")
        return (cpu_seconds(process.pid) - before) / messages


@contextmanager
def _polling(
    command: list[str], env: dict[str, str], cwd: Path, log: Path, fake: FakeTelegram
) -> Iterator[int]:
    """``liz telegram run`` until the block ends, once it reads; yields its pid."""
    with log.open("ab") as output:
        process = subprocess.Popen(
            command, cwd=cwd, env={**os.environ, **env}, stdout=output, stderr=output
        )
        try:
            _wait(lambda: any(c.method == "getUpdates" for c in fake.calls), process)
            yield process.pid
        finally:
            process.terminate()
            process.wait(timeout=30)


def _wait(
    done: Callable[[], bool],
    process: subprocess.Popen[bytes] | None = None,
    timeout: float = 300,
) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if process is not None and process.poll() is not None:
            raise RuntimeError("liz telegram run exited")
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.01)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="liz-bench-telegram-"))
    rows = []
    with scripted_server(log_dir=folder) as llm_url:
        for _ in range(args.rounds):
            http = http_cost(llm_url, folder, args.messages)
            telegram = telegram_cost(llm_url, folder, args.messages)
            rows.append((http, telegram))
    print("| round | HTTP turn, CPU ms | Telegram message, CPU ms | ratio |")
    print("|---|---|---|---|")
    for number, (http, telegram) in enumerate(rows, 1):
        print(f"| {number} | {http * 1000:.2f} | {telegram * 1000:.2f} | {telegram / http:.2f} |")
    http_all = sorted(h for h, _ in rows)[len(rows) // 2]
    telegram_all = sorted(t for _, t in rows)[len(rows) // 2]
    print(
        f"| median | {http_all * 1000:.2f} | {telegram_all * 1000:.2f} | "
        f"{telegram_all / http_all:.2f} |"
    )


if __name__ == "__main__":
    main()
