"""The Twitter/X bot loop: scheduled posts and replies to mentions (``liz twitter``).

The bot itself is :class:`liz.twitter.bot.TwitterBot`; this package's top level
holds what needs no database: the transport protocol and its errors, the settings,
the thread splitter. The settings are imported when first asked for: pydantic-settings
would otherwise load with every ``liz`` command, ``liz --help`` too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from liz.twitter.errors import (
    TwitterAuthError,
    TwitterDuplicate,
    TwitterError,
    TwitterNotFound,
    TwitterOutcomeUnknown,
    TwitterPostUnconfirmed,
    TwitterRateLimited,
    TwitterRejected,
    TwitterTransientError,
)
from liz.twitter.splitter import split_into_tweets, tweet_length
from liz.twitter.transport import Tweet, TwitterTransport, TwitterUser

if TYPE_CHECKING:
    from liz.twitter.settings import TwitterSettings

__all__ = [
    "Tweet",
    "TwitterAuthError",
    "TwitterDuplicate",
    "TwitterError",
    "TwitterNotFound",
    "TwitterOutcomeUnknown",
    "TwitterPostUnconfirmed",
    "TwitterRateLimited",
    "TwitterRejected",
    "TwitterSettings",
    "TwitterTransientError",
    "TwitterTransport",
    "TwitterUser",
    "split_into_tweets",
    "tweet_length",
]


def __getattr__(name: str) -> Any:
    if name == "TwitterSettings":
        from liz.twitter.settings import TwitterSettings

        return TwitterSettings
    raise AttributeError(f"module 'liz.twitter' has no attribute {name!r}")
