"""The Twitter/X bot loop: scheduled posts and replies to mentions (``liz twitter``).

The bot itself is :class:`liz.twitter.bot.TwitterBot`; this package's top level
holds what needs no database: the transport protocol and its errors, the settings,
the thread splitter. They are imported when first asked for, so a command that only
needs a module of the package (``liz twitter outbox``, ``liz --help``) does not load
the settings and the splitter's tables.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "liz.twitter.errors": (
        "TwitterAuthError",
        "TwitterDuplicate",
        "TwitterError",
        "TwitterNotFound",
        "TwitterOutcomeUnknown",
        "TwitterPostUnconfirmed",
        "TwitterRateLimited",
        "TwitterRejected",
        "TwitterTransientError",
    ),
    "liz.twitter.settings": ("TwitterSettings",),
    "liz.twitter.splitter": ("split_into_tweets", "tweet_length"),
    "liz.twitter.transport": ("Tweet", "TwitterTransport", "TwitterUser"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

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
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'liz.twitter' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
