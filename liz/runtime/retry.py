"""One way to try again: tenacity, waiting on liz's clock.

Fact extraction, the Twitter loops and writes that lost a race all retry
through :func:`retrying`, so they wait alike (a server's ``Retry-After`` first,
else exponential backoff with jitter) and a test's ``ManualClock`` drives every
wait. Use it as tenacity's ``AsyncRetrying``: ``async for attempt in retrying(...)``,
each try inside ``with attempt:``.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_never,
)
from tenacity.wait import wait_base

from liz.types import Clock, SystemClock

logger = logging.getLogger(__name__)

Wait = Callable[[RetryCallState], float]


def backoff(first: float = 1.0, cap: float = 900.0) -> Wait:
    """Exponential backoff with full jitter (:func:`backoff_seconds`), as a tenacity wait."""
    return lambda state: backoff_seconds(state.attempt_number, first, cap)


def backoff_seconds(attempt: int, first: float, cap: float) -> float:
    """A random wait up to ``first * 2**(attempt - 1)``, at most ``cap``: clients that
    failed together do not retry together."""
    return random.uniform(0.0, min(cap, first * 2.0 ** min(attempt - 1, 64)))


def retry_after(error: BaseException | None) -> float | None:
    """The seconds a failed call's ``retry_after`` asks to wait (a server's
    ``Retry-After``), if it asks."""
    asked = getattr(error, "retry_after", None)
    if isinstance(asked, int | float) and asked >= 0:
        return float(asked)
    return None


def honour_retry_after(fallback: Wait) -> Wait:
    """Wait as long as the failed call's ``retry_after`` (seconds) asks, else ``fallback``."""

    def wait(state: RetryCallState) -> float:
        asked = retry_after(state.outcome.exception() if state.outcome is not None else None)
        return fallback(state) if asked is None else asked

    return wait


def retrying(
    *,
    retry_if: Callable[[BaseException], bool],
    attempts: int | None = None,
    wait: Wait | wait_base | None = None,
    clock: Clock | None = None,
) -> AsyncRetrying:
    """Retry while ``retry_if(error)``; ``attempts=None`` retries for as long as it takes.

    The last error is re-raised as it was when the attempts run out or an error
    does not qualify. ``wait`` defaults to the error's ``retry_after``, else backoff.
    """
    return AsyncRetrying(
        stop=stop_never if attempts is None else stop_after_attempt(attempts),
        wait=wait if wait is not None else honour_retry_after(backoff()),
        retry=retry_if_exception(retry_if),
        sleep=(clock or SystemClock()).sleep,
        reraise=True,
        before_sleep=_log_retry,
    )


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    logger.info(
        "attempt %d failed (%s); trying again in %.1f s",
        state.attempt_number,
        error,
        state.next_action.sleep if state.next_action is not None else 0.0,
    )
