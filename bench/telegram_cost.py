"""A message's own cost on the Telegram path, beside an HTTP turn on the same agent.

    python bench/telegram_cost.py --messages 200 [--rounds 3] [--profile DIR]

Both paths run as processes of their own against the scripted LLM (its own process)
on fresh SQLite files: ``liz serve`` taking ``POST /agent/input`` one at a time, and
``liz telegram run`` reading from the fake Bot API (in this process). What is
measured is the CPU time (user + system) of the liz process per message, with fact
learning off so that only the turn and its path are counted. Each path pays for its
own platform I/O: the HTTP turn parses the request and writes the response; the
Telegram message is read with ``getUpdates``, stored, answered and sent with
``sendMessage``, with the outbox's notes.

Telegram is measured twice. "One at a time" sends the next message once the last
was answered, as the HTTP turns are: each message pays its own ``getUpdates`` and
inbox transaction. "Burst" sends them all at once, so one ``getUpdates`` brings
many. Each window runs from idle to idle: from the moment the bot waits in a long
poll after the warm-up answer to the moment it waits again after the last answer,
so the work after the last send (noting it) is counted and idle waiting is not
(a long poll costs no CPU while it waits). The echo bot is python-telegram-bot
alone, one message at a time: ``getUpdates`` and ``sendMessage``, no database and no
turn, the Telegram I/O any polling bot pays; "less the echo bot" is the Telegram
message's cost with that I/O taken out, beside the whole HTTP turn. The scripted LLM
answers at once, so no "typing" is shown: it is from an answer's first second on.
With ``--profile``, py-spy samples each measured process into DIR (collapsed stacks).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from benchkit import free_port, py_spy, running
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


def telegram_cost(
    llm_url: str,
    folder: Path,
    messages: int,
    *,
    one_at_a_time: bool,
    profile: Path | None,
    echo: bool = False,
) -> float:
    """CPU per message of ``liz telegram run``, or of the echo bot (``echo``)."""
    telegram = FakeTelegram(token=TOKEN)
    with telegram.serve() as api_url:
        env = base_env(llm_url, folder, f"telegram-{time.monotonic_ns()}")
        env |= {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_URL": api_url}
        env["TELEGRAM_POLL_TIMEOUT"] = "25"
        log = folder / "telegram.log"
        command = (
            [sys.executable, str(Path(__file__).resolve()), "--echo-bot"]
            if echo
            else [sys.executable, "-m", "liz", "telegram", "run", "--agent", "business-advisor"]
        )
        with _polling(command, env, folder, log, telegram) as pid:

            def idle_after(answers: int) -> Callable[[], bool]:
                # Every answer sent, noted, and the bot back in a long poll.
                return lambda: len(telegram.sent) == answers and telegram.polling()

            telegram.say("warm up", user_id=1)
            _wait(idle_after(1))
            with py_spy(pid, profile):
                before = cpu_seconds(pid)
                for number in range(messages):
                    text = f"message {number}: how do I price a product?"
                    telegram.say(text, user_id=2 + number)
                    if one_at_a_time:
                        _wait(idle_after(number + 2))
                _wait(idle_after(messages + 1))
                return (cpu_seconds(pid) - before) / messages


async def echo_bot() -> None:
    """python-telegram-bot alone, the least a polling bot does per message: read the
    update with ``getUpdates``, answer it with ``sendMessage``; no database, no turn."""
    from telegram import Bot
    from telegram.request import HTTPXRequest

    root = os.environ["TELEGRAM_API_URL"]
    bot = Bot(
        os.environ["TELEGRAM_BOT_TOKEN"],
        base_url=f"{root}/bot{{token}}",
        request=HTTPXRequest(connection_pool_size=8),
        get_updates_request=HTTPXRequest(read_timeout=35.0),
    )
    async with bot:
        offset = None
        while True:
            updates = await bot.get_updates(offset=offset, timeout=25, allowed_updates=["message"])
            for update in updates:
                if update.message is not None:
                    await bot.send_message(update.message.chat.id, f"Re: {update.message.text}")
                offset = update.update_id + 1


def http_cost(llm_url: str, folder: Path, messages: int, profile: Path | None) -> float:
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
        with py_spy(process.pid, profile):
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
            _wait(fake.polling, process)
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
    parser.add_argument("--profile", type=Path, help="write py-spy profiles to this folder")
    parser.add_argument("--echo-bot", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_bot:
        asyncio.run(echo_bot())
        return
    folder = Path(tempfile.mkdtemp(prefix="liz-bench-telegram-"))
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)

    def profile(name: str, number: int) -> Path | None:
        return args.profile / f"{name}-{number}.txt" if args.profile else None

    rows = []
    with scripted_server(log_dir=folder) as llm_url:
        for number in range(1, args.rounds + 1):
            http = http_cost(llm_url, folder, args.messages, profile("http", number))
            costs = [http]
            for is_echo, one_at_a_time, name in (
                (True, True, "echo-one-at-a-time"),
                (False, True, "telegram-one-at-a-time"),
                (False, False, "telegram-burst"),
            ):
                costs.append(
                    telegram_cost(
                        llm_url,
                        folder,
                        args.messages,
                        one_at_a_time=one_at_a_time,
                        profile=profile(name, number),
                        echo=is_echo,
                    )
                )
            rows.append(costs)
    print(
        f"CPU per message of each process, {args.messages} messages a round, from idle to "
        "idle; ratios to the HTTP turn of the same round:\n"
    )
    print(
        "| round | HTTP turn, ms | echo bot, ms | Telegram one at a time, ms | ratio "
        "| same, less the echo bot's I/O: ratio | Telegram burst, ms | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for number, (http, echo, single, burst) in enumerate(rows, 1):
        ratio = (single / http, (single - echo) / http, burst / http)
        ratios.append(ratio)
        print(
            f"| {number} | {http * 1000:.2f} | {echo * 1000:.2f} | {single * 1000:.2f} "
            f"| {ratio[0]:.2f} | {ratio[1]:.2f} | {burst * 1000:.2f} | {ratio[2]:.2f} |"
        )
    single_ratio, less_echo, burst_ratio = (
        sorted(column)[len(column) // 2] for column in zip(*ratios, strict=True)
    )
    print(f"| median ratio | | | | {single_ratio:.2f} | {less_echo:.2f} | | {burst_ratio:.2f} |")


if __name__ == "__main__":
    main()
