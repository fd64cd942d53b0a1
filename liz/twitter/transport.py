"""What the bot needs from X, as a protocol, and the values it passes around.

Three transports implement it: :mod:`liz.twitter.api_transport` (the official
API v2 through tweepy), :mod:`liz.twitter.twikit_transport` (an account's web
session, for accounts without API access) and :class:`liz.testing.fake_twitter.FakeTwitter`
(in memory, for tests and ``--dry-run``). Tweet ids are integers everywhere:
compared as strings, "999" sorts after "1000".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class TwitterUser:
    """An X account."""

    id: int
    username: str
    name: str = ""


@dataclass(frozen=True)
class Tweet:
    """One tweet, as the bot sees it."""

    id: int
    text: str
    author_id: int
    author_username: str
    conversation_id: int
    created_at: datetime
    in_reply_to_id: int | None = None
    image_urls: tuple[str, ...] = field(default=())

    @property
    def permanent_url(self) -> str:
        return f"https://x.com/{self.author_username}/status/{self.id}"


@runtime_checkable
class TwitterTransport(Protocol):
    """The calls the bot makes on X. Every failure is a :class:`liz.twitter.errors.TwitterError`."""

    async def me(self) -> TwitterUser:
        """The account the bot posts as."""
        ...

    async def post(self, text: str, reply_to: int | None = None) -> Tweet:
        """Post a tweet, as a reply to ``reply_to`` when given; return the posted tweet.

        Raises :class:`liz.twitter.errors.TwitterOutcomeUnknown` when the call failed
        in a way that X may still have posted it (a timeout, a dropped connection), and
        :class:`liz.twitter.errors.TwitterDuplicate` when X refused the text as one the
        account already posted (the bot relies on it after an unknown outcome).
        """
        ...

    async def mentions(
        self, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        """Every tweet mentioning the account with an id above ``since_id``, in any order.

        Every page is read back to ``since_id`` (or to the first page with a tweet
        created before ``not_before``); a failure part way keeps the pages read, and
        the next call with the same arguments goes on from there
        (:class:`liz.twitter.paging.TimelineReader`).
        """
        ...

    async def user_tweets(
        self, username: str, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        """Every tweet by ``username`` above ``since_id``, read as :meth:`mentions` reads."""
        ...

    async def own_tweets(
        self, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        """The account's own tweets and replies above ``since_id``, read as :meth:`mentions`
        reads: where the bot looks for a post whose outcome it does not know."""
        ...

    async def get_tweet(self, tweet_id: int) -> Tweet:
        """One tweet by id; :class:`TwitterNotFound` if it is gone."""
        ...

    async def like(self, tweet_id: int) -> None:
        """Like a tweet as the account."""
        ...

    async def aclose(self) -> None:
        """Release network resources."""
        ...
