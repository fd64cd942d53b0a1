"""The Twitter/X bot loop: scheduled posts and replies to mentions (``liz twitter``).

The bot itself is :class:`liz.twitter.bot.TwitterBot`; this package's top level
holds what needs no database: the transport protocol and its errors, the thread
splitter.
"""

from __future__ import annotations

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
from liz.twitter.settings import TwitterSettings
from liz.twitter.splitter import split_into_tweets, tweet_length
from liz.twitter.transport import Tweet, TwitterTransport, TwitterUser

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
