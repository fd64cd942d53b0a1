"""Errors a Twitter/X transport raises, typed by what the bot loop should do about them.

Each transport translates its library's exceptions into these once, so the loop
never sees ``tweepy`` or ``twikit`` types.
"""

from __future__ import annotations

from datetime import datetime

from liz.errors import LizError, LLMNotConfigured, UsageError


class TwitterError(LizError):
    """Base of every transport failure."""

    status = 502


class TwitterAuthError(TwitterError):
    """The credentials are missing, wrong or revoked; retrying will not help."""

    status = 401


class TwitterRateLimited(TwitterError):
    """X refused the call for now; ``reset_at`` is when it allows calls again, if known."""

    status = 429

    def __init__(self, message: str, *, reset_at: datetime | None = None) -> None:
        super().__init__(message)
        self.reset_at = reset_at


class TwitterNotFound(TwitterError):
    """The tweet or user does not exist (any more), or is not visible to this account."""

    status = 404


class TwitterRejected(TwitterError):
    """X refused this one request (too long, duplicate, forbidden); retrying it as is won't help."""

    status = 400


class TwitterDuplicate(TwitterRejected):
    """X refused the post because the account already posted the same text (X's error 187,
    "duplicate content"). After a post call whose outcome was unknown, this says it is out."""


class TwitterTransientError(TwitterError):
    """A network failure or a server error on X's side; worth retrying later."""

    status = 503


class TwitterOutcomeUnknown(TwitterTransientError):
    """The call failed after X may have acted on it (a timeout, a dropped connection, a
    server error): a post may be out. Look before posting it again."""


class TwitterPostUnconfirmed(TwitterTransientError):
    """A post whose call got no answer is not on X's timelines yet, and may still show up
    there: the bot keeps looking (``TWITTER_UNCONFIRMED_POST_WAIT_MINUTES``) before it posts
    it again, and posts nothing more of that thread meanwhile."""


def answer_lost(operation: str, detail: str) -> TwitterTransientError:
    """A call whose answer was lost: X may have acted on it, so after a post a tweet may be out."""
    if operation == "create_tweet":
        return TwitterOutcomeUnknown(detail)
    return TwitterTransientError(detail)


# Failures no waiting will cure: the loops stop and ``TwitterBot.run`` raises them.
FATAL_ERRORS = (TwitterAuthError, LLMNotConfigured, UsageError)
