"""An in-memory X for tests and ``liz twitter --dry-run``: a :class:`TwitterTransport`.

It keeps the tweets of a small world of accounts, answers the bot's calls the
way X does (ids grow, mentions newest first, posts over the length limit are
refused) and lets a test script the world: other users tweet, the service goes
down, a rate limit hits.

>>> x = FakeTwitter(username="ada_bot")
>>> x.tweet_as("bob", "@ada_bot what's new?")
>>> await bot.start()  # the bot answers; x.posts holds what it posted
"""

from __future__ import annotations

import re
from datetime import datetime

from liz.twitter.errors import (
    TwitterError,
    TwitterNotFound,
    TwitterRateLimited,
    TwitterRejected,
    TwitterTransientError,
)
from liz.twitter.splitter import MAX_TWEET_LENGTH, tweet_length
from liz.twitter.transport import Tweet, TwitterUser
from liz.types import Clock, SystemClock

# Ids start just below a power of ten, so code that compares ids as strings
# ("999" > "1000") goes wrong within the first few tweets.
FIRST_TWEET_ID = 995

OPERATIONS = ("me", "post", "mentions", "user_tweets", "get_tweet", "like")


class FakeTwitter:
    """A scripted X holding one bot account and any number of other users."""

    def __init__(
        self,
        *,
        username: str = "liz_bot",
        user_id: int = 1,
        clock: Clock | None = None,
        max_length: int = MAX_TWEET_LENGTH,
        first_tweet_id: int = FIRST_TWEET_ID,
    ) -> None:
        self.clock = clock or SystemClock()
        self.max_length = max_length
        self.account = TwitterUser(id=user_id, username=username, name=username)
        self.users: dict[str, TwitterUser] = {username.lower(): self.account}
        self.tweets: dict[int, Tweet] = {}
        self.liked: list[int] = []
        self.calls: list[str] = []
        self.closed = False
        self._next_id = first_tweet_id
        self._failures: list[tuple[frozenset[str], TwitterError]] = []
        self._down = False

    # --- scripting the world -------------------------------------------------------

    def user(self, username: str) -> TwitterUser:
        """The account named ``username``, created on first use."""
        key = username.lower().lstrip("@")
        if key not in self.users:
            self.users[key] = TwitterUser(id=1000 + len(self.users), username=key, name=key)
        return self.users[key]

    def tweet_as(
        self,
        username: str,
        text: str,
        *,
        reply_to: int | None = None,
        image_urls: tuple[str, ...] = (),
    ) -> Tweet:
        """Another user (or the bot, by its name) tweets ``text``."""
        return self._add(self.user(username), text, reply_to, image_urls)

    def fail_next(
        self, error: TwitterError, *, times: int = 1, operations: tuple[str, ...] = OPERATIONS
    ) -> None:
        """Make the next ``times`` calls to any of ``operations`` raise ``error``."""
        unknown = set(operations) - set(OPERATIONS)
        if unknown:
            raise ValueError(f"unknown operations {sorted(unknown)}; use some of {OPERATIONS}")
        self._failures.extend([(frozenset(operations), error)] * times)

    def rate_limit_until(
        self, reset_at: datetime, *, operations: tuple[str, ...] = OPERATIONS
    ) -> None:
        """Refuse the next call to any of ``operations`` as rate limited until ``reset_at``."""
        self.fail_next(TwitterRateLimited("rate limited", reset_at=reset_at), operations=operations)

    def go_down(self) -> None:
        """Every call fails as a network outage until :meth:`come_back`."""
        self._down = True

    def come_back(self) -> None:
        self._down = False

    # --- what happened ------------------------------------------------------------

    @property
    def posts(self) -> list[Tweet]:
        """Every tweet the bot account posted, oldest first."""
        return [t for t in self._ordered() if t.author_id == self.account.id]

    def replies_to(self, tweet_id: int) -> list[Tweet]:
        return [t for t in self._ordered() if t.in_reply_to_id == tweet_id]

    # --- the transport ------------------------------------------------------------

    async def me(self) -> TwitterUser:
        self._enter("me")
        return self.account

    async def post(self, text: str, reply_to: int | None = None) -> Tweet:
        self._enter("post")
        length = tweet_length(text)
        if not text.strip() or length > self.max_length:
            raise TwitterRejected(
                f"tweet text must be 1 to {self.max_length} weighted characters, got {length}"
            )
        if reply_to is not None and reply_to not in self.tweets:
            raise TwitterNotFound(f"tweet {reply_to} to reply to does not exist")
        return self._add(self.account, text, reply_to, ())

    async def mentions(self, since_id: int | None) -> list[Tweet]:
        self._enter("mentions")
        pattern = re.compile(rf"@{re.escape(self.account.username)}\b", re.IGNORECASE)
        found = []
        for tweet in self._ordered():
            if tweet.author_id == self.account.id:
                continue
            if since_id is not None and tweet.id <= since_id:
                continue
            parent = self.tweets.get(tweet.in_reply_to_id or 0)
            if pattern.search(tweet.text) or (parent and parent.author_id == self.account.id):
                found.append(tweet)
        return found[::-1]  # newest first, as X answers

    async def user_tweets(self, username: str, since_id: int | None) -> list[Tweet]:
        self._enter("user_tweets")
        key = username.lower().lstrip("@")
        if key not in self.users:
            raise TwitterNotFound(f"no user named {username!r}")
        author = self.users[key]
        found = [
            t
            for t in self._ordered()
            if t.author_id == author.id and (since_id is None or t.id > since_id)
        ]
        return found[::-1]

    async def get_tweet(self, tweet_id: int) -> Tweet:
        self._enter("get_tweet")
        if tweet_id not in self.tweets:
            raise TwitterNotFound(f"tweet {tweet_id} does not exist")
        return self.tweets[tweet_id]

    async def like(self, tweet_id: int) -> None:
        self._enter("like")
        if tweet_id not in self.tweets:
            raise TwitterNotFound(f"tweet {tweet_id} does not exist")
        self.liked.append(tweet_id)

    async def aclose(self) -> None:
        self.closed = True

    # --- internals ----------------------------------------------------------------

    def _enter(self, operation: str) -> None:
        self.calls.append(operation)
        if self._down:
            raise TwitterTransientError(f"X is unreachable ({operation})")
        for index, (operations, error) in enumerate(self._failures):
            if operation in operations:
                del self._failures[index]
                raise error

    def _add(
        self, author: TwitterUser, text: str, reply_to: int | None, image_urls: tuple[str, ...]
    ) -> Tweet:
        if reply_to is not None and reply_to not in self.tweets:
            raise ValueError(f"tweet {reply_to} does not exist in this fake")
        tweet_id = self._next_id
        self._next_id += 1
        conversation = self.tweets[reply_to].conversation_id if reply_to is not None else tweet_id
        tweet = Tweet(
            id=tweet_id,
            text=text,
            author_id=author.id,
            author_username=author.username,
            conversation_id=conversation,
            created_at=self.clock.now(),
            in_reply_to_id=reply_to,
            image_urls=tuple(image_urls),
        )
        self.tweets[tweet_id] = tweet
        return tweet

    def _ordered(self) -> list[Tweet]:
        return [self.tweets[key] for key in sorted(self.tweets)]
