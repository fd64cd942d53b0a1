"""X through an account's web session with twikit, for accounts without API access.

``pip install 'liz-agents[twikit]'``. It logs in with ``TWITTER_USERNAME``,
``TWITTER_EMAIL`` and ``TWITTER_PASSWORD`` once and keeps the session cookies
in ``TWITTER_COOKIES_FILE``, so later starts reuse the session instead of
logging in again (frequent logins get accounts locked). This uses X's private
web API: it may break when X changes it, and X's rules may not allow it for
your account; prefer the official API where you can.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from liz._compat import twikit_conversation_id
from liz.errors import UsageError
from liz.twitter.errors import (
    TwitterAuthError,
    TwitterDuplicate,
    TwitterError,
    TwitterNotFound,
    TwitterRateLimited,
    TwitterRejected,
    TwitterTransientError,
    answer_lost,
)
from liz.twitter.paging import TimelineReaders, TweetPage
from liz.twitter.settings import TwitterSettings
from liz.twitter.transport import Tweet, TwitterUser

logger = logging.getLogger(__name__)
T = TypeVar("T")
PAGE_SIZE = 20


def _import_twikit() -> Any:
    try:
        import twikit
    except ImportError as exc:
        raise UsageError(
            "TWITTER_TRANSPORT=twikit needs the twikit package: pip install 'liz-agents[twikit]'"
        ) from exc
    return twikit


def translate_twikit_error(exc: BaseException, operation: str) -> TwitterError:
    """The ``TwitterError`` for a twikit or network failure during ``operation``."""
    import httpx

    errors = _import_twikit().errors
    detail = f"X web {operation} failed: {exc}"
    if isinstance(exc, errors.TooManyRequests):
        reset = getattr(exc, "rate_limit_reset", None)
        reset_at = datetime.fromtimestamp(int(reset), UTC) if reset else None
        return TwitterRateLimited(detail, reset_at=reset_at)
    if isinstance(exc, _named(errors, "Unauthorized", "AccountSuspended", "AccountLocked")):
        return TwitterAuthError(f"{detail} (log in again: delete TWITTER_COOKIES_FILE)")
    # twikit raises its own types for a deleted tweet or user, beside the HTTP 404 one.
    gone = _named(errors, "NotFound", "TweetNotAvailable", "UserNotFound", "UserUnavailable")
    if isinstance(exc, gone):
        return TwitterNotFound(detail)
    if isinstance(exc, _named(errors, "DuplicateTweet")):
        return TwitterDuplicate(detail)  # X's error 187: the account posted this text already
    if isinstance(exc, _named(errors, "BadRequest", "Forbidden", "CouldNotTweet", "InvalidMedia")):
        return TwitterRejected(detail)
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return TwitterTransientError(detail)  # never reached X: nothing happened there
    transient = (
        *_named(errors, "ServerError", "RequestTimeout"),
        httpx.TransportError,
        TimeoutError,
    )
    if isinstance(exc, transient):
        return answer_lost(operation, detail)
    return TwitterError(detail)


def _named(module: Any, *names: str) -> tuple[type[BaseException], ...]:
    """The exception classes of ``module`` with these names (older twikit lacks some)."""
    return tuple(getattr(module, name) for name in names if hasattr(module, name))


class TwikitTransport:
    """A :class:`TwitterTransport` on twikit's web client."""

    def __init__(self, client: Any, settings: TwitterSettings) -> None:
        self.client = client
        self.settings = settings
        self._account: TwitterUser | None = None
        self._logged_in = False
        self._user_ids: dict[str, int] = {}
        self._readers = TimelineReaders()

    @classmethod
    def from_settings(cls, settings: TwitterSettings) -> TwikitTransport:
        if not settings.has_login_credentials:
            raise UsageError(
                "TWITTER_TRANSPORT=twikit needs TWITTER_USERNAME and TWITTER_PASSWORD "
                "(and TWITTER_EMAIL if X asks for it at login)"
            )
        return cls(_import_twikit().Client(language="en-US"), settings)

    async def _call(self, operation: str, call: Awaitable[T]) -> T:
        try:
            return await call
        except TwitterError:
            raise
        except Exception as exc:
            raise translate_twikit_error(exc, operation) from exc

    async def _session(self) -> None:
        """Reuse the cached cookies, or log in once and cache them (owner-only file)."""
        if self._logged_in:
            return
        cookies = Path(self.settings.cookies_file)
        if cookies.is_file():
            self.client.load_cookies(str(cookies))
            logger.info("twikit: reusing the session in %s", cookies)
        else:
            password = self.settings.password
            await self._call(
                "login",
                self.client.login(
                    auth_info_1=self.settings.username,
                    auth_info_2=self.settings.email,
                    password=password.get_secret_value() if password else "",
                ),
            )
            self.client.save_cookies(str(cookies))
            os.chmod(cookies, 0o600)
            logger.info("twikit: logged in, session saved to %s", cookies)
        self._logged_in = True

    async def me(self) -> TwitterUser:
        if self._account is None:
            await self._session()
            user = await self._call("user", self.client.user())
            self._account = TwitterUser(id=int(user.id), username=user.screen_name, name=user.name)
        return self._account

    async def post(self, text: str, reply_to: int | None = None) -> Tweet:
        await self.me()
        created = await self._call(
            "create_tweet",
            self.client.create_tweet(
                text=text, reply_to=None if reply_to is None else str(reply_to)
            ),
        )
        return self._tweet(created, reply_to=reply_to)

    async def mentions(
        self, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        return await self._readers.read("mentions", self._mentions_page, since_id, not_before)

    async def user_tweets(
        self, username: str, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        await self.me()
        key = username.lower().lstrip("@")
        if key not in self._user_ids:
            user = await self._call(
                "get_user_by_screen_name", self.client.get_user_by_screen_name(key)
            )
            self._user_ids[key] = int(user.id)
        page = partial(self._timeline_page, self._user_ids[key], "Tweets")
        return await self._readers.read(f"user:{key}", page, since_id, not_before)

    async def own_tweets(
        self, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        account = await self.me()

        async def page(since: int | None, cursor: str | None) -> TweetPage:
            found = await self._timeline_page(account.id, "Replies", since, cursor)
            # The replies tab shows the tweets replied to as well.
            own = [t for t in found.tweets if t.author_id == account.id]
            return TweetPage(own, found.next_token if found.tweets else None)

        return await self._readers.read("own", page, since_id, not_before)

    async def _mentions_page(self, since_id: int | None, cursor: str | None) -> TweetPage:
        # Search has no since-id: the reader stops at the first page reaching the cursor.
        account = await self.me()
        found = await self._call(
            "search_tweet",
            self.client.search_tweet(
                f"@{account.username}", "Latest", count=PAGE_SIZE, cursor=cursor
            ),
        )
        return self.page(found)

    async def _timeline_page(
        self, user_id: int, kind: str, _since_id: int | None, cursor: str | None
    ) -> TweetPage:
        found = await self._call(
            "get_user_tweets",
            self.client.get_user_tweets(str(user_id), kind, count=PAGE_SIZE, cursor=cursor),
        )
        return self.page(found)

    def page(self, result: Any) -> TweetPage:
        """A twikit ``Result`` as a page: its tweets and ``next_cursor`` (X's web timelines
        always offer one, so an empty page ends the read)."""
        tweets = [self._tweet(raw) for raw in result]
        return TweetPage(tweets, getattr(result, "next_cursor", None) if tweets else None)

    async def get_tweet(self, tweet_id: int) -> Tweet:
        await self.me()
        return self._tweet(
            await self._call("get_tweet_by_id", self.client.get_tweet_by_id(str(tweet_id)))
        )

    async def like(self, tweet_id: int) -> None:
        await self.me()
        await self._call("favorite_tweet", self.client.favorite_tweet(str(tweet_id)))

    async def aclose(self) -> None:
        http = getattr(self.client, "http", None)
        close = getattr(http, "aclose", None)
        if close is not None:
            await close()

    def _tweet(self, raw: Any, reply_to: int | None = None) -> Tweet:
        in_reply_to = getattr(raw, "in_reply_to", None) or reply_to
        conversation = twikit_conversation_id(raw) or in_reply_to or raw.id
        created = getattr(raw, "created_at_datetime", None) or datetime.now(UTC)
        images = []
        for media in getattr(raw, "media", None) or []:
            if isinstance(media, dict):
                kind, url = media.get("type"), media.get("media_url_https")
            else:
                kind, url = getattr(media, "type", None), getattr(media, "media_url", None)
            if kind == "photo" and url:
                images.append(str(url))
        return Tweet(
            id=int(raw.id),
            text=str(getattr(raw, "full_text", None) or raw.text),
            author_id=int(raw.user.id),
            author_username=str(raw.user.screen_name),
            conversation_id=int(conversation),
            created_at=created,
            in_reply_to_id=int(in_reply_to) if in_reply_to else None,
            image_urls=tuple(images),
        )
