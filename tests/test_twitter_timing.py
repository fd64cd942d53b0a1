"""The manual clock tests use to move time, the backoff, and the bot's settings."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from liz.errors import LLMError
from liz.testing.clock import ManualClock
from liz.twitter.errors import TwitterAuthError, TwitterRateLimited, TwitterTransientError
from liz.twitter.retry import bot_retrying
from liz.twitter.settings import TwitterSettings

START = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


@pytest.mark.anyio
async def test_manual_clock_wakes_sleepers_in_time_order() -> None:
    clock = ManualClock(START)
    woke: list[tuple[str, datetime]] = []

    async def every(name: str, seconds: float) -> None:
        while True:
            await clock.sleep(seconds)
            woke.append((name, clock.now()))

    tasks = [asyncio.create_task(every("fast", 60)), asyncio.create_task(every("slow", 150))]
    await clock.wait_for_sleepers(2)
    await clock.advance(minutes=5)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    minutes = [(name, int((at - START).total_seconds() // 60)) for name, at in woke]
    assert minutes == [
        ("fast", 1),
        ("fast", 2),
        ("slow", 2),
        ("fast", 3),
        ("fast", 4),
        ("slow", 5),  # due at the same time as "fast": the one that slept first wakes first
        ("fast", 5),
    ]
    assert clock.now() == START + timedelta(minutes=5)
    assert clock.sleeping == 0


@pytest.mark.anyio
async def test_waiting_for_sleepers_that_never_come_fails_clearly() -> None:
    clock = ManualClock(START, timeout=0.05)
    with pytest.raises(TimeoutError, match="expected 1 tasks asleep"):
        await clock.wait_for_sleepers(1)


async def attempt_gaps(
    clock: ManualClock, errors: Iterator[Exception], *, run_for: float, base: float = 30
) -> list[float]:
    """Seconds between the attempts the bot's retry makes at a call failing with ``errors``."""
    settings = TwitterSettings(
        _env_file=None,  # type: ignore[call-arg]
        backoff_base_seconds=base,
        backoff_max_seconds=60,
    )
    times: list[datetime] = []

    async def call() -> None:
        times.append(clock.now())
        raise next(errors)

    async def retry() -> None:
        async for attempt in bot_retrying(settings, clock, what="test"):
            with attempt:
                await call()

    task = asyncio.create_task(retry())
    await clock.wait_for_sleepers(1)
    await clock.advance(run_for)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return [(b - a).total_seconds() for a, b in itertools.pairwise(times)]


def failing_forever(*first: Exception) -> Iterator[Exception]:
    return itertools.chain(first, itertools.repeat(TwitterTransientError("down")))


@pytest.mark.anyio
async def test_backoff_grows_with_jitter_and_caps() -> None:
    gaps = await attempt_gaps(ManualClock(START), failing_forever(), run_for=250, base=10)
    ceilings = [10, 20, 40, 60, 60, 60, 60]
    assert len(gaps) >= 4
    assert all(c / 2 <= d <= c for d, c in zip(gaps, ceilings, strict=False))
    # A new retry (the next cycle) starts from the first delay again.
    again = await attempt_gaps(ManualClock(START), failing_forever(), run_for=10, base=10)
    assert again[0] <= 10


@pytest.mark.anyio
async def test_rate_limit_waits_until_the_reported_reset() -> None:
    error = TwitterRateLimited("slow down", reset_at=START + timedelta(minutes=7))
    gaps = await attempt_gaps(ManualClock(START), failing_forever(error), run_for=7 * 60 + 61)
    assert gaps[0] == 7 * 60 + 1
    assert 15 <= gaps[1] <= 60


@pytest.mark.anyio
async def test_llm_rate_limit_waits_as_long_as_the_endpoint_asked() -> None:
    error = LLMError("rate limited", status=503, retry_after=120.0)
    gaps = await attempt_gaps(ManualClock(START), failing_forever(error), run_for=121)
    assert gaps == [120.0]


@pytest.mark.anyio
async def test_fatal_errors_are_not_retried() -> None:
    clock = ManualClock(START)
    settings = TwitterSettings(_env_file=None)  # type: ignore[call-arg]
    calls = 0
    with pytest.raises(TwitterAuthError):
        async for attempt in bot_retrying(settings, clock, what="test"):
            with attempt:
                calls += 1
                raise TwitterAuthError("revoked")
    assert calls == 1


def test_settings_read_twitter_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # monkeypatch sets environment variables only; no code is patched.
    monkeypatch.setenv("TWITTER_TARGET_USERS", "@alice, bob ,")
    monkeypatch.setenv("TWITTER_POLLING_INTERVAL", "2")
    monkeypatch.setenv("TWITTER_DRY_RUN", "true")
    settings = TwitterSettings(_env_file=None)  # type: ignore[call-arg]
    assert settings.target_users == ["alice", "bob"]
    assert settings.polling_interval == 2
    assert settings.dry_run is True
    assert settings.max_tweet_length == 280


def test_settings_refuse_a_min_interval_above_the_max() -> None:
    with pytest.raises(ValidationError, match="swap them"):
        TwitterSettings(_env_file=None, post_interval_min_hours=5, post_interval_max_hours=2)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="set both"):
        TwitterSettings(_env_file=None, post_interval_min_hours=5)  # type: ignore[call-arg]


def test_random_post_interval_stays_between_min_and_max() -> None:
    settings = TwitterSettings(
        _env_file=None,  # type: ignore[call-arg]
        post_interval_min_hours=1,
        post_interval_max_hours=3,
    )
    rng = random.Random(7)
    hours = [settings.post_interval(rng).total_seconds() / 3600 for _ in range(50)]
    assert all(1 <= h <= 3 for h in hours)
    assert max(hours) - min(hours) > 1  # actually random, not a fixed value
