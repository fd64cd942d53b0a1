"""The manual clock tests use to move time, the backoff, and the bot's settings."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from liz.errors import LLMError
from liz.testing.clock import ManualClock
from liz.twitter.errors import TwitterRateLimited, TwitterTransientError
from liz.twitter.retry import Backoff, delay_after
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


def test_backoff_grows_with_jitter_and_caps() -> None:
    backoff = Backoff(base=10, cap=60, rng=random.Random(1))
    delays = [backoff.next_delay() for _ in range(6)]
    ceilings = [10, 20, 40, 60, 60, 60]
    assert all(c / 2 <= d <= c for d, c in zip(delays, ceilings, strict=True))
    backoff.reset()
    assert backoff.next_delay() <= 10


def test_rate_limit_waits_until_the_reported_reset() -> None:
    backoff = Backoff(rng=random.Random(1))
    error = TwitterRateLimited("slow down", reset_at=START + timedelta(minutes=7))
    assert delay_after(error, START, backoff) == 7 * 60 + 1
    assert backoff.failures == 0  # a rate limit is not a failure to back off from
    assert 15 <= delay_after(TwitterTransientError("down"), START, backoff) <= 30


def test_llm_rate_limit_waits_as_long_as_the_endpoint_asked() -> None:
    backoff = Backoff(rng=random.Random(1))
    error = LLMError("rate limited", status=503, retry_after=120.0)
    assert delay_after(error, START, backoff) == 120.0
    assert backoff.failures == 0


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
