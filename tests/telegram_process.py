"""``liz telegram run`` as a real process against the fake Bot API and the scripted LLM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from liz.testing.fake_telegram import FakeTelegram
from liz.testing.openai_server import RecordedRequest

TOKEN = "424242:fake-SECRET-token-for-tests"
CURRENT = re.compile(r"<CURRENT_USER_INPUT>\n(.*?)\n", re.S)


class Brain:
    """The scripted LLM: answers each message with ``Re: <its text>`` (or ``reply``)."""

    def __init__(self, *, pause: float = 0.0, reply: Callable[[str], str] | None = None) -> None:
        self.pause = pause
        self.reply = reply
        self.asked: list[str] = []

    async def __call__(self, request: RecordedRequest) -> Any:
        import asyncio

        if request.schema_name == "RouteChoice":
            return {"route": "conversation", "confidence": 0.9, "reasoning": "chat"}
        if request.schema_name == "ExtractedFacts":
            return {"facts": []}
        if request.schema_name is not None:
            return {}
        said = last_user_text(request)
        self.asked.append(said)
        if self.pause:
            await asyncio.sleep(self.pause)
        return self.reply(said) if self.reply else f"Re: {said}"


def last_user_text(request: RecordedRequest) -> str:
    """The message being answered: what the context prompt holds as the current input."""
    found = CURRENT.search(request.prompt)
    return found[1].strip() if found else ""


def bot_env(api_url: str, llm_url: str, database_url: str, **extra: str) -> dict[str, str]:
    return {
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_API_URL": api_url,
        "TELEGRAM_POLL_TIMEOUT": "1",
        "OPENAI_BASE_URL": llm_url,
        "OPENAI_API_KEY": "test",
        "DATABASE_URL": database_url,
        "LIZ_LLM_MAX_RETRIES": "0",
        **extra,
    }


class BotProcess:
    """One ``liz telegram run`` (or ``liz discord run``) process and its log."""

    def __init__(
        self,
        env: dict[str, str],
        cwd: Path,
        name: str,
        args: tuple[str, ...] = (),
        platform: str = "telegram",
    ) -> None:
        self.platform = platform
        self.log_path = cwd / f"{name}.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "liz", platform, "run", "--agent", "business-advisor", *args],
            cwd=cwd,
            env={**os.environ, **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log:
            if self.process.poll() is not None:
                raise RuntimeError(f"liz {self.platform} run exited:\n{self.log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {text!r} in the log:\n{self.log}")
            time.sleep(0.05)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._log.close()

    def terminate(self) -> None:
        """Stop as a service manager does (SIGTERM)."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        self._log.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self._log.close()


@contextmanager
def running_bot(
    env: dict[str, str],
    cwd: Path,
    name: str = "bot",
    args: tuple[str, ...] = (),
    platform: str = "telegram",
) -> Iterator[BotProcess]:
    bot = BotProcess(env, cwd, name, args, platform)
    try:
        yield bot
    finally:
        bot.stop()


def wait_until(check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def answers(telegram: FakeTelegram, said: str) -> int:
    """How many messages the bot sent that answer ``said``."""
    return sum(1 for message in telegram.sent if message.text == f"Re: {said}")


def polled_after_last_send(telegram: FakeTelegram) -> bool:
    """Whether the bot asked for updates after its last send (so it noted that send)."""
    methods = [call.method for call in telegram.calls]
    if "sendMessage" not in methods:
        return False
    last_send = len(methods) - 1 - methods[::-1].index("sendMessage")
    return "getUpdates" in methods[last_send:]
