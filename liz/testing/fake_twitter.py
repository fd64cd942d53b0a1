"""An in-memory X for tests and ``liz twitter --dry-run``: a :class:`TwitterTransport`.

It keeps the tweets of a small world of accounts, answers the bot's calls the
way X does (ids grow, timelines newest first and in pages of ``page_size``, posts
over the length limit are refused) and lets a test script the world: other users
tweet, the service goes down, a rate limit hits, a post times out after X took it
and X's timelines do not show it yet, an exact repeat of a post is refused as X does.

>>> x = FakeTwitter(username="ada_bot", page_size=10)
>>> x.tweet_as("bob", "@ada_bot what's new?").author_username
'bob'
>>> x.limit_rate(("mentions",), calls=5)       # 5 pages per 15 minutes
>>> x.time_out_after_accepting()              # the next post is out, but the call fails
>>> x.time_out_after_accepting(unseen_for=timedelta(minutes=10))  # ...and timelines lag

A bot given ``x`` as its transport answers; ``x.posts`` holds what it posted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from liz.twitter.errors import (
    TwitterDuplicate,
    TwitterError,
    TwitterNotFound,
    TwitterOutcomeUnknown,
    TwitterRateLimited,
    TwitterRejected,
    TwitterTransientError,
)
from liz.twitter.paging import TimelineReaders, TweetPage
from liz.twitter.splitter import MAX_TWEET_LENGTH, tweet_length
from liz.twitter.transport import Tweet, TwitterUser
from liz.types import Clock, SystemClock

# Ids start just below a power of ten, so code that compares ids as strings
# ("999" > "1000") goes wrong within the first few tweets.
FIRST_TWEET_ID = 995

OPERATIONS = ("me", "post", "mentions", "user_tweets", "own_tweets", "get_tweet", "like")


@dataclass
class _Failure:
    operations: frozenset[str]
    error: TwitterError
    after: int  # calls to let through first
    accepted: bool  # a post is made before the error is raised
    unseen_for: timedelta = timedelta(0)  # how long timelines leave out that post


@dataclass
class _RateWindow:
    calls: int
    per: timedelta
    started: datetime | None = None
    used: int = 0


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
        page_size: int = 100,
        refuse_duplicates: bool = False,
    ) -> None:
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {page_size}")
        self.clock = clock or SystemClock()
        self.max_length = max_length
        self.page_size = page_size
        # X refuses a post whose text the account already posted ("duplicate content").
        self.refuse_duplicates = refuse_duplicates
        self.account = TwitterUser(id=user_id, username=username, name=username)
        self.users: dict[str, TwitterUser] = {username.lower(): self.account}
        self.tweets: dict[int, Tweet] = {}
        self.liked: list[int] = []
        self.calls: list[str] = []
        self.closed = False
        self._next_id = first_tweet_id
        self._failures: list[_Failure] = []
        self._rates: dict[str, _RateWindow] = {}
        self._readers = TimelineReaders()
        self._unseen_until: dict[int, datetime] = {}
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
        self,
        error: TwitterError,
        *,
        times: int = 1,
        operations: tuple[str, ...] = OPERATIONS,
        after: int = 0,
    ) -> None:
        """Make the next ``times`` calls to any of ``operations`` raise ``error``, once
        ``after`` calls to them have gone through."""
        self._script_failure(error, times, operations, after, accepted=False)

    def time_out_after_accepting(
        self, *, times: int = 1, after: int = 0, unseen_for: timedelta = timedelta(0)
    ) -> None:
        """The next ``times`` posts (once ``after`` posts have gone through) are made, but
        the call fails as a timeout: X took the post, the bot does not know it.

        With ``unseen_for``, every timeline (the account's own included) leaves such a
        post out until that long after it was made, as X's timelines and search lag:
        the bot looking for it finds nothing yet. ``get_tweet`` by id finds it at once.
        """
        if unseen_for < timedelta(0):
            raise ValueError(f"unseen_for must not be negative, got {unseen_for}")
        error = TwitterOutcomeUnknown("X took too long to answer (the post is out)")
        self._script_failure(error, times, ("post",), after, accepted=True, unseen_for=unseen_for)

    def limit_rate(
        self, operations: tuple[str, ...], *, calls: int, per: timedelta = timedelta(minutes=15)
    ) -> None:
        """Allow ``calls`` calls to each of ``operations`` per window of ``per``, as X does;
        beyond that a call is refused as rate limited until the window ends."""
        self._check_operations(operations)
        for operation in operations:
            self._rates[operation] = _RateWindow(calls=calls, per=per)

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
        failure = self._enter("post")
        length = tweet_length(text)
        if not text.strip() or length > self.max_length:
            raise TwitterRejected(
                f"tweet text must be 1 to {self.max_length} weighted characters, got {length}"
            )
        if reply_to is not None and reply_to not in self.tweets:
            raise TwitterNotFound(f"tweet {reply_to} to reply to does not exist")
        if self.refuse_duplicates and any(t.text == text for t in self.posts):
            # X's words (API v1.1 error 187, v2 403).
            raise TwitterDuplicate("You are not allowed to create a Tweet with duplicate content.")
        tweet = self._add(self.account, text, reply_to, ())
        if failure is not None:
            if failure.unseen_for > timedelta(0):
                self._unseen_until[tweet.id] = tweet.created_at + failure.unseen_for
            raise failure.error
        return tweet

    async def mentions(
        self, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        return await self._read("mentions", "mentions", self._mentions, since_id, not_before)

    async def user_tweets(
        self, username: str, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        key = username.lower().lstrip("@")
        if key not in self.users:
            self._enter("user_tweets")
            raise TwitterNotFound(f"no user named {username!r}")
        author = self.users[key]
        return await self._read(
            f"user:{key}", "user_tweets", lambda t: t.author_id == author.id, since_id, not_before
        )

    async def own_tweets(
        self, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        own = self.account.id
        return await self._read(
            "own", "own_tweets", lambda t: t.author_id == own, since_id, not_before
        )

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

    def _check_operations(self, operations: tuple[str, ...]) -> None:
        unknown = set(operations) - set(OPERATIONS)
        if unknown:
            raise ValueError(f"unknown operations {sorted(unknown)}; use some of {OPERATIONS}")

    def _script_failure(
        self,
        error: TwitterError,
        times: int,
        operations: tuple[str, ...],
        after: int,
        *,
        accepted: bool,
        unseen_for: timedelta = timedelta(0),
    ) -> None:
        self._check_operations(operations)
        # The first waits ``after`` calls; the others follow it one call after another.
        entries = [
            _Failure(frozenset(operations), error, after if n == 0 else 0, accepted, unseen_for)
            for n in range(times)
        ]
        self._failures.extend(entries)

    def _enter(self, operation: str) -> _Failure | None:
        """Count the call and raise what was scripted for it; returns a failure to raise
        only after the call has done its work (a post X took, then timed out)."""
        self.calls.append(operation)
        if self._down:
            raise TwitterTransientError(f"X is unreachable ({operation})")
        pending: _Failure | None = None
        for failure in self._failures:
            if operation not in failure.operations:
                continue
            if failure.after > 0:
                failure.after -= 1  # this call goes through; the failure waits for a later one
            else:
                self._failures.remove(failure)
                if not failure.accepted:
                    raise failure.error
                pending = failure
            break
        self._check_rate(operation)
        return pending

    def _check_rate(self, operation: str) -> None:
        window = self._rates.get(operation)
        if window is None:
            return
        now = self.clock.now()
        if window.started is None or now >= window.started + window.per:
            window.started, window.used = now, 0
        if window.used >= window.calls:
            reset_at = window.started + window.per
            raise TwitterRateLimited(f"rate limited ({operation})", reset_at=reset_at)
        window.used += 1

    def _mentions(self, tweet: Tweet) -> bool:
        if tweet.author_id == self.account.id:
            return False
        pattern = re.compile(rf"@{re.escape(self.account.username)}\b", re.IGNORECASE)
        parent = self.tweets.get(tweet.in_reply_to_id or 0)
        return bool(pattern.search(tweet.text)) or (
            parent is not None and parent.author_id == self.account.id
        )

    async def _read(
        self,
        timeline: str,
        operation: str,
        belongs: Callable[[Tweet], bool],
        since_id: int | None,
        not_before: datetime | None,
    ) -> list[Tweet]:
        """Read a timeline page by page, as the real transports do."""

        async def page(since: int | None, token: str | None) -> TweetPage:
            self._enter(operation)
            # Newest first, above the since-id, below the page token (the last id sent).
            found = [
                t
                for t in reversed(self._ordered())
                if belongs(t)
                and self._shown(t)
                and (since is None or t.id > since)
                and (token is None or t.id < int(token))
            ]
            tweets = found[: self.page_size]
            more = len(found) > self.page_size
            return TweetPage(tweets, str(tweets[-1].id) if more else None)

        return await self._readers.read(timeline, page, since_id, not_before)

    def _shown(self, tweet: Tweet) -> bool:
        """False while X's timelines lag behind a post (see :meth:`time_out_after_accepting`)."""
        until = self._unseen_until.get(tweet.id)
        return until is None or self.clock.now() >= until

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
