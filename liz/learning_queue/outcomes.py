"""What a failed try means for a learning job: try again later (and when), or set it aside.

Outages (the LLM unreachable, overloaded or rate limited, or refusing our key; the
database down or full) are retried for as long as they last. Unusable answers, messages
the endpoint refuses (another 4xx), and a server error on one message while others are
learned get ``max_bad_answers`` tries. Anything else no retry can fix. A job set aside
is listed by ``liz facts queue --failed`` and ``/health``; the user's later jobs go on.
Messages learned together that fail for a reason other than an outage are tried again
one by one, each failure counted for its own job.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.exc import SQLAlchemyError

from liz.errors import LLMError, StorageError
from liz.learning_queue.settings import LearningSettings
from liz.llm.errors import UNAVAILABLE, LLMOutputError
from liz.runtime.retry import backoff_seconds, retry_after

# Statuses that refuse the request, not the message: the API key (401), the account's
# credit (402), the model's name (404). Timeouts, conflicts and rate limits (408, 409,
# 429) pass. Any other 4xx is the endpoint refusing this message.
_ENDPOINT_REFUSES_US = frozenset({401, 402, 404})
_TRY_AGAIN = frozenset({408, 409, 429})


def is_refused_message(error: BaseException) -> bool:
    """The endpoint answered that it will not take this request as it is (a 4xx that
    is neither about our settings nor a passing condition): another message may pass."""
    if not isinstance(error, LLMError) or isinstance(error, LLMOutputError):
        return False
    status = error.upstream_status or 0
    return 400 <= status < 500 and status not in _ENDPOINT_REFUSES_US | _TRY_AGAIN


def is_outage(error: BaseException) -> bool:
    """The LLM or the database is down, or refuses every request: retry without limit."""
    if isinstance(error, LLMOutputError) or is_refused_message(error):
        return False
    return isinstance(error, LLMError | StorageError | SQLAlchemyError | OSError)


def affects_every_message(error: BaseException) -> bool:
    """The LLM or the database is unavailable (unreachable, overloaded, rate limited,
    answering with a server error, refusing our key, down): messages learned together
    would fare no better one by one."""
    if isinstance(error, LLMOutputError):
        return False
    if isinstance(error, LLMError):
        status = error.upstream_status or 0
        return error.status == UNAVAILABLE or status >= 500 or status in _ENDPOINT_REFUSES_US
    return isinstance(error, StorageError | SQLAlchemyError | OSError)


def worth_retrying(
    error: BaseException, attempts: int, settings: LearningSettings, *, blamed: bool = False
) -> bool:
    """Whether a job that has failed ``attempts`` times, the last with ``error``, goes on;
    ``blamed``: a server error taken for the message's own doing (see ``is_server_error``)."""
    if isinstance(error, LLMOutputError) or is_refused_message(error) or blamed:
        return attempts < settings.max_bad_answers
    return is_outage(error)


def is_server_error(error: BaseException) -> bool:
    """The endpoint answered with a server error (5xx). Alone it reads as an outage; when
    the endpoint answered other messages since this one's last try, it is this message's
    doing, and counts against its tries like an unusable answer."""
    if not isinstance(error, LLMError) or isinstance(error, LLMOutputError):
        return False
    return (error.upstream_status or 0) >= 500


# Server errors that tell of the endpoint's own state (a gateway's failure, overload, a
# gateway's timeout): messages learned together would fare no better one by one.
_ENDPOINT_STATE = frozenset({502, 503, 504})


def may_be_one_messages_doing(error: BaseException) -> bool:
    """A server error one input can cause every time (a 500 above all), while the
    endpoint answers other inputs: worth trying the messages of a round one by one."""
    return is_server_error(error) and getattr(error, "upstream_status", None) not in _ENDPOINT_STATE


def next_try(
    error: BaseException, attempts: int, now: datetime, settings: LearningSettings
) -> datetime:
    """When to try again after the ``attempts``-th failure: the server's ``Retry-After``
    if it gave one, else backoff with jitter, never sooner than ``first_retry_seconds``."""
    asked = retry_after(error)
    if asked is None:
        first, cap = settings.first_retry_seconds, settings.max_retry_seconds
        asked = backoff_seconds(max(attempts, 1), first, cap)
    seconds = max(asked, settings.first_retry_seconds)
    return now + timedelta(seconds=seconds)


def describe(error: BaseException) -> str:
    """The reason recorded for a failure: our own errors' messages, else the type too."""
    message = getattr(error, "message", None)
    if isinstance(message, str) and message:
        return message
    return f"{type(error).__name__}: {error}"
