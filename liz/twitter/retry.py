"""How long the loop waits after a failure: until a rate limit resets, or an exponential backoff."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime

from liz.errors import LLMError
from liz.twitter.errors import TwitterRateLimited

# When X reports a rate limit without a reset time, its windows are 15 minutes.
RATE_LIMIT_WINDOW_SECONDS = 15 * 60


@dataclass
class Backoff:
    """Exponential backoff with jitter: ``base * 2**n`` capped at ``cap``, then a random
    value in its upper half, so several bots that failed together do not retry together."""

    base: float = 30.0
    cap: float = 900.0
    rng: random.Random = field(default_factory=random.Random)
    failures: int = 0

    def next_delay(self) -> float:
        ceiling = min(self.cap, self.base * 2**self.failures)
        self.failures += 1
        return self.rng.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        self.failures = 0


def delay_after(error: Exception, now: datetime, backoff: Backoff) -> float:
    """Seconds to wait after ``error``: until the reset X or the LLM endpoint reported for a
    rate limit, else backoff."""
    if isinstance(error, LLMError) and error.retry_after is not None:
        return max(1.0, error.retry_after)
    if isinstance(error, TwitterRateLimited):
        if error.reset_at is None:
            return float(RATE_LIMIT_WINDOW_SECONDS)
        # One second past the reset, so the first call after it is allowed.
        return max(1.0, (error.reset_at - now).total_seconds() + 1.0)
    return backoff.next_delay()
