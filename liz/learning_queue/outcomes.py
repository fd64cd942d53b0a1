"""What a failed try means for a learning job: try again later (and when), or give up.

Outages (the LLM unreachable, overloaded or rate limited; the database down or full)
are retried for as long as they last, waiting longer each time. Unusable answers
may come out right on another try, so they get ``max_bad_answers`` tries. Anything
else (facts embedded with another model, a message that is gone, a bug) no retry
can fix: the job is failed with the reason, listed by ``liz facts queue``.

Messages learned together fail together; only when the LLM or the database is
unavailable does that say nothing about the messages themselves. Any other failure
(an unusable answer, an error the endpoint answered with) may be one message's
doing, so they are then tried one by one, each failure counted for its own job.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.exc import SQLAlchemyError
from tenacity import RetryCallState

from liz.errors import LLMError, StorageError
from liz.learning_queue.settings import LearningSettings
from liz.llm.errors import UNAVAILABLE, LLMOutputError
from liz.retry import backoff, honour_retry_after


def is_outage(error: BaseException) -> bool:
    """The LLM or the database is down: retry without limit."""
    if isinstance(error, LLMOutputError):
        return False
    return isinstance(error, LLMError | StorageError | SQLAlchemyError | OSError)


def affects_every_message(error: BaseException) -> bool:
    """The LLM or the database is unavailable (unreachable, overloaded, rate limited,
    answering with a server error, down): messages learned together would fare no
    better one by one."""
    if isinstance(error, LLMOutputError):
        return False
    if isinstance(error, LLMError):
        return error.status == UNAVAILABLE or (error.upstream_status or 0) >= 500
    return isinstance(error, StorageError | SQLAlchemyError | OSError)


def worth_retrying(error: BaseException, attempts: int, settings: LearningSettings) -> bool:
    """Whether a job that has failed ``attempts`` times, the last with ``error``, goes on."""
    if isinstance(error, LLMOutputError):
        return attempts < settings.max_bad_answers
    return is_outage(error)


def next_try(
    error: BaseException, attempts: int, now: datetime, settings: LearningSettings
) -> datetime:
    """When to try again after the ``attempts``-th failure: the server's ``Retry-After``
    if it gave one, else backoff with jitter, never sooner than ``first_retry_seconds``."""
    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = max(attempts, 1)
    state.set_exception((type(error), error, error.__traceback__))
    wait = honour_retry_after(backoff(settings.first_retry_seconds, settings.max_retry_seconds))
    seconds = max(wait(state), settings.first_retry_seconds)
    return now + timedelta(seconds=seconds)


def describe(error: BaseException) -> str:
    """The reason recorded for a failure: our own errors' messages, else the type too."""
    message = getattr(error, "message", None)
    if isinstance(message, str) and message:
        return message
    return f"{type(error).__name__}: {error}"
