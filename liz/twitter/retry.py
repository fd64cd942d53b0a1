"""How the bot's loops wait after a failure, on :mod:`liz.runtime.retry`.

A rate limit from X waits until the reset X reported; an LLM endpoint's
``Retry-After`` is honoured; anything else backs off exponentially with jitter.
Failures no waiting will cure (bad credentials, no LLM) are raised at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tenacity import AsyncRetrying, RetryCallState, wait_exponential, wait_random_exponential

from liz.errors import LizError
from liz.runtime.retry import Wait, honour_retry_after, retrying
from liz.twitter.errors import FATAL_ERRORS, TwitterRateLimited
from liz.twitter.settings import TwitterSettings
from liz.types import Clock

logger = logging.getLogger(__name__)

# When X reports a rate limit without a reset time, its windows are 15 minutes.
RATE_LIMIT_WINDOW_SECONDS = 15 * 60


def bot_wait(settings: TwitterSettings, clock: Clock) -> Wait:
    """X's rate-limit reset, else the LLM endpoint's ``Retry-After``, else backoff.

    A rate limit waits until one second past X's reset, so the first call after it is
    allowed. The backoff waits at least half of ``base * 2**n`` (capped) and at most all
    of it: bots that failed together spread out, yet none retries almost at once.
    """
    first, cap = settings.backoff_base_seconds / 2, settings.backoff_max_seconds / 2
    backoff = honour_retry_after(
        wait_exponential(multiplier=first, max=cap)
        + wait_random_exponential(multiplier=first, max=cap)
    )

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        if not isinstance(error, TwitterRateLimited):
            return backoff(state)
        if error.reset_at is None:
            return float(RATE_LIMIT_WINDOW_SECONDS)
        return max(1.0, (error.reset_at - clock.now()).total_seconds() + 1.0)

    return wait


def is_worth_retrying(error: BaseException) -> bool:
    """Any failure but the fatal ones (and cancellation, which is no failure)."""
    return isinstance(error, Exception) and not isinstance(error, FATAL_ERRORS)


def bot_retrying(
    settings: TwitterSettings,
    clock: Clock,
    *,
    what: str,
    retry_if: Callable[[BaseException], bool] = is_worth_retrying,
) -> AsyncRetrying:
    """Retry ``what`` for as long as it takes, waiting as :func:`bot_wait` says."""
    return retrying(retry_if=retry_if, wait=bot_wait(settings, clock), clock=clock).copy(
        before_sleep=lambda state: _log_failure(what, state)
    )


def _log_failure(what: str, state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    delay = state.next_action.sleep if state.next_action is not None else 0.0
    # The loop is an outermost edge: unexpected errors are logged with their
    # traceback once, expected ones as a line.
    if isinstance(error, LizError):
        logger.warning("%s failed: %s; next try in %.0f s", what, error.message, delay)
    else:
        logger.error("%s failed unexpectedly; next try in %.0f s", what, delay, exc_info=error)
