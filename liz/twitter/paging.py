"""Reading a timeline back to the cursor: every page, across rate limits.

X answers timelines newest first, a page at a time. Reading only the first
page and moving the cursor to its newest tweet skips everything older on the
pages not read. A :class:`TimelineReader` reads page after page until it
reaches the cursor (or, with no cursor yet, tweets too old to answer). When a
call fails part way (a rate limit, an outage), it keeps the pages it has read
and where the next one starts, so the next read with the same cursor goes on
from there instead of starting over: a storm of mentions is read over as many
polls as the rate limits need.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime

from liz.twitter.errors import TwitterRejected
from liz.twitter.transport import Tweet


@dataclass(frozen=True)
class TweetPage:
    """One page of a newest-first timeline and where the next (older) page starts."""

    tweets: list[Tweet]
    next_token: str | None = None  # None: this was the last page


# fetch_page(since_id, page_token) -> one page; page_token None asks for the newest page.
FetchPage = Callable[[int | None, str | None], Awaitable[TweetPage]]


@dataclass
class _Progress:
    since_id: int | None
    not_before: datetime | None
    next_token: str | None = None
    tweets: dict[int, Tweet] = field(default_factory=dict)


class TimelineReader:
    """Reads one timeline back to a cursor, page by page; resumable after a failed call."""

    def __init__(self, fetch_page: FetchPage) -> None:
        self._fetch_page = fetch_page
        self._progress: _Progress | None = None

    async def read(
        self, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        """Every tweet above ``since_id``, newest first (as X answers).

        Reading also stops at the first page that holds a tweet created before
        ``not_before`` (the tweets of that page are returned too, so the caller can
        record them as seen); with neither bound, only the newest page is read.
        """
        progress = self._progress
        if progress is None or (progress.since_id, progress.not_before) != (since_id, not_before):
            progress = self._progress = _Progress(since_id, not_before)
        while True:
            try:
                page = await self._fetch_page(since_id, progress.next_token)
            except TwitterRejected:
                # X may refuse a stale page token: start again from the newest page.
                self._progress = None
                raise
            if _add_page(progress, page):
                break
            progress.next_token = page.next_token
        self._progress = None
        return sorted(progress.tweets.values(), key=lambda tweet: tweet.id, reverse=True)


class TimelineReaders:
    """A transport's readers, one per timeline (``"mentions"``, ``"user:<name>"``, ``"own"``)."""

    def __init__(self) -> None:
        self._readers: dict[str, TimelineReader] = {}

    async def read(
        self, key: str, fetch_page: FetchPage, since_id: int | None, not_before: datetime | None
    ) -> list[Tweet]:
        if key not in self._readers:
            self._readers[key] = TimelineReader(fetch_page)
        return await self._readers[key].read(since_id, not_before=not_before)


def _add_page(progress: _Progress, page: TweetPage) -> bool:
    """Keep the page's new tweets; True when the read is complete."""
    done = page.next_token is None or not page.tweets
    since_id, not_before = progress.since_id, progress.not_before
    for tweet in page.tweets:
        if since_id is not None and tweet.id <= since_id:
            done = True  # reached the cursor: all further pages are older still
            continue
        if not_before is not None and tweet.created_at < not_before:
            done = True
        progress.tweets[tweet.id] = tweet
    return done or (since_id is None and not_before is None)
