"""The official X API v2, through tweepy's asyncio client (``pip install 'liz-agents[twitter]'``).

Needs a developer-portal app with OAuth 1.0a user-context keys (read and
write); reading mentions needs an access level that allows it (the free tier
posts only). Tweepy's exceptions are translated here into ``liz.twitter.errors``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

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

T = TypeVar("T")

# What every tweet read asks X to include: enough for a Tweet with its author and photos.
FIELDS: dict[str, Any] = {
    "tweet_fields": [
        "author_id",
        "conversation_id",
        "created_at",
        "referenced_tweets",
        "attachments",
    ],
    "expansions": ["author_id", "attachments.media_keys"],
    "media_fields": ["url", "type"],
    "user_fields": ["username"],
}
PAGE_SIZE = 100


def translate_tweepy_error(exc: BaseException, operation: str) -> TwitterError:
    """The ``TwitterError`` for a tweepy, aiohttp or timeout failure during ``operation``."""
    import aiohttp
    import tweepy

    detail = f"X API {operation} failed: {exc}"
    if isinstance(exc, tweepy.TooManyRequests):
        return TwitterRateLimited(detail, reset_at=_rate_limit_reset(exc))
    if isinstance(exc, tweepy.Unauthorized):
        return TwitterAuthError(
            f"{detail} (check TWITTER_API_KEY, TWITTER_API_SECRET, TWITTER_ACCESS_TOKEN "
            "and TWITTER_ACCESS_SECRET)"
        )
    if isinstance(exc, tweepy.NotFound):
        return TwitterNotFound(detail)
    if isinstance(exc, tweepy.BadRequest | tweepy.Forbidden):
        return (TwitterDuplicate if _is_duplicate(exc) else TwitterRejected)(detail)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return TwitterTransientError(detail)  # never reached X: nothing happened there
    if isinstance(exc, tweepy.TwitterServerError | aiohttp.ClientError | asyncio.TimeoutError):
        return answer_lost(operation, detail)
    return TwitterError(detail)


def _is_duplicate(exc: Any) -> bool:
    """X refused the text as one the account already posted: v1.1's error 187, v2's 403
    "You are not allowed to create a Tweet with duplicate content."."""
    messages = " ".join(str(m) for m in getattr(exc, "api_messages", []))
    return 187 in getattr(exc, "api_codes", []) or "duplicate content" in messages.lower()


def _rate_limit_reset(exc: Any) -> datetime | None:
    """When X allows calls again: its ``x-rate-limit-reset`` header (epoch seconds), if sent."""
    # tweepy keeps the HTTP response (requests' or aiohttp's) but does not parse the header.
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    raw = headers.get("x-rate-limit-reset")
    try:
        return None if raw is None else datetime.fromtimestamp(int(raw), UTC)
    except ValueError:
        return None


class TweepyTransport:
    """A :class:`TwitterTransport` on X API v2 with OAuth 1.0a user context."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._account: TwitterUser | None = None
        self._user_ids: dict[str, int] = {}
        # Replies posted by the bot belong to their parent's conversation; X's
        # create call does not say which, so remember what we have seen.
        self._conversations: dict[int, int] = {}
        self._readers = TimelineReaders()

    @classmethod
    def from_settings(cls, settings: TwitterSettings) -> TweepyTransport:
        if not settings.has_api_credentials:
            raise UsageError(
                "the X API transport needs TWITTER_API_KEY, TWITTER_API_SECRET, "
                "TWITTER_ACCESS_TOKEN and TWITTER_ACCESS_SECRET (the README's Twitter/X "
                "section says where to get them), or set "
                "TWITTER_TRANSPORT=twikit to log in with TWITTER_USERNAME/TWITTER_PASSWORD"
            )
        try:
            from tweepy.asynchronous import AsyncClient
        except ImportError as exc:
            raise UsageError(
                "the X API transport needs tweepy with aiohttp: pip install 'liz-agents[twitter]'"
            ) from exc

        def secret(value: Any) -> str | None:
            return None if value is None else str(value.get_secret_value())

        client = AsyncClient(
            bearer_token=secret(settings.bearer_token),
            consumer_key=secret(settings.api_key),
            consumer_secret=secret(settings.api_secret),
            access_token=secret(settings.access_token),
            access_token_secret=secret(settings.access_secret),
        )
        return cls(client)

    async def _call(self, operation: str, call: Awaitable[T]) -> T:
        try:
            return await call
        except Exception as exc:
            raise translate_tweepy_error(exc, operation) from exc

    async def me(self) -> TwitterUser:
        if self._account is None:
            response = await self._call("get_me", self.client.get_me(user_auth=True))
            user = response.data
            self._account = TwitterUser(id=int(user.id), username=user.username, name=user.name)
        return self._account

    async def post(self, text: str, reply_to: int | None = None) -> Tweet:
        account = await self.me()
        response = await self._call(
            "create_tweet",
            self.client.create_tweet(text=text, in_reply_to_tweet_id=reply_to, user_auth=True),
        )
        tweet_id = int(response.data["id"])
        conversation = tweet_id if reply_to is None else self._conversations.get(reply_to, reply_to)
        self._conversations[tweet_id] = conversation
        return Tweet(
            id=tweet_id,
            text=str(response.data.get("text", text)),
            author_id=account.id,
            author_username=account.username,
            conversation_id=conversation,
            created_at=datetime.now(UTC),
            in_reply_to_id=reply_to,
        )

    async def mentions(
        self, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        page = partial(self._page, "get_users_mentions", (await self.me()).id)
        return await self._readers.read("mentions", page, since_id, not_before)

    async def user_tweets(
        self, username: str, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        key = username.lower().lstrip("@")
        if key not in self._user_ids:
            found = await self._call("get_user", self.client.get_user(username=key, user_auth=True))
            if found.data is None:
                raise TwitterNotFound(f"no X user named {username!r}")
            self._user_ids[key] = int(found.data.id)
        page = partial(self._page, "get_users_tweets", self._user_ids[key], exclude=["retweets"])
        return await self._readers.read(f"user:{key}", page, since_id, not_before)

    async def own_tweets(
        self, since_id: int | None, *, not_before: datetime | None = None
    ) -> list[Tweet]:
        account = await self.me()
        page = partial(self._page, "get_users_tweets", account.id, exclude=["retweets"])
        return await self._readers.read("own", page, since_id, not_before)

    async def _page(
        self, operation: str, user_id: int, since_id: int | None, token: str | None, **extra: Any
    ) -> TweetPage:
        """One page of a user's timeline (``get_users_tweets``) or mentions."""
        response = await self._call(
            operation,
            getattr(self.client, operation)(
                user_id,
                since_id=since_id,
                max_results=PAGE_SIZE,
                pagination_token=token,
                user_auth=True,
                **extra,
                **FIELDS,
            ),
        )
        return self.page(response)

    async def get_tweet(self, tweet_id: int) -> Tweet:
        response = await self._call(
            "get_tweet", self.client.get_tweet(tweet_id, user_auth=True, **FIELDS)
        )
        tweets = self._tweets(response)
        if not tweets:
            raise TwitterNotFound(f"tweet {tweet_id} does not exist or is not visible")
        return tweets[0]

    async def like(self, tweet_id: int) -> None:
        await self._call("like", self.client.like(tweet_id, user_auth=True))

    async def aclose(self) -> None:
        session = getattr(self.client, "session", None)
        if session is not None:
            await session.close()

    def page(self, response: Any) -> TweetPage:
        """A tweepy ``Response`` as a page: its tweets and ``meta.next_token``."""
        meta = response.meta or {}
        return TweetPage(self._tweets(response), meta.get("next_token"))

    def _tweets(self, response: Any) -> list[Tweet]:
        data = response.data
        if data is None:
            return []
        items = data if isinstance(data, list) else [data]
        includes = response.includes or {}
        usernames = {int(u.id): u.username for u in includes.get("users", [])}
        photos = {
            m.media_key: m.url
            for m in includes.get("media", [])
            if getattr(m, "type", None) == "photo" and getattr(m, "url", None)
        }
        tweets = []
        for item in items:
            replied_to = next(
                (int(r.id) for r in item.referenced_tweets or [] if r.type == "replied_to"), None
            )
            media_keys = (item.attachments or {}).get("media_keys", [])
            tweet = Tweet(
                id=int(item.id),
                text=item.text,
                author_id=int(item.author_id),
                author_username=usernames.get(int(item.author_id), str(item.author_id)),
                conversation_id=int(item.conversation_id or item.id),
                created_at=item.created_at or datetime.now(UTC),
                in_reply_to_id=replied_to,
                image_urls=tuple(photos[key] for key in media_keys if key in photos),
            )
            self._conversations[tweet.id] = tweet.conversation_id
            tweets.append(tweet)
        return tweets
