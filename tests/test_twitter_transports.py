"""The real transports' error translation: library exceptions become ``liz.twitter.errors``."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import aiohttp
import httpx
import pytest
import requests
import tweepy

from liz.twitter.api_transport import TweepyTransport, translate_tweepy_error
from liz.twitter.errors import (
    TwitterAuthError,
    TwitterDuplicate,
    TwitterError,
    TwitterNotFound,
    TwitterOutcomeUnknown,
    TwitterRateLimited,
    TwitterRejected,
    TwitterTransientError,
)
from liz.twitter.paging import TweetPage
from liz.twitter.twikit_transport import translate_twikit_error

NO_TWIKIT = "twikit is not installed: pip install 'liz-agents[twikit]'"


def http_response(status: int, headers: dict[str, str]) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response.reason = "Too Many Requests"
    response.raw = io.BytesIO(b'{"title": "Too Many Requests", "status": 429}')
    response.headers.update(headers)
    return response


def test_tweepy_rate_limit_carries_the_reset_x_reported() -> None:
    reset = datetime(2026, 1, 1, 12, 15, tzinfo=UTC)
    exc = tweepy.TooManyRequests(
        http_response(429, {"x-rate-limit-reset": str(int(reset.timestamp()))})
    )
    error = translate_tweepy_error(exc, "get_users_mentions")
    assert isinstance(error, TwitterRateLimited)
    assert error.reset_at == reset


def test_tweepy_rate_limit_without_a_reset_header_has_none() -> None:
    error = translate_tweepy_error(tweepy.TooManyRequests(http_response(429, {})), "like")
    assert isinstance(error, TwitterRateLimited)
    assert error.reset_at is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("TweetNotAvailable", TwitterNotFound),
        ("UserNotFound", TwitterNotFound),
        ("UserUnavailable", TwitterNotFound),
        ("NotFound", TwitterNotFound),
        ("DuplicateTweet", TwitterDuplicate),
        ("CouldNotTweet", TwitterRejected),
        ("Forbidden", TwitterRejected),
        ("RequestTimeout", TwitterTransientError),
        ("ServerError", TwitterTransientError),
        ("AccountLocked", TwitterAuthError),
    ],
)
def test_twikit_errors_are_typed_by_what_the_bot_should_do(
    name: str, expected: type[TwitterError]
) -> None:
    twikit = pytest.importorskip("twikit", reason=NO_TWIKIT)
    exc = getattr(twikit.errors, name)("from X")
    assert type(translate_twikit_error(exc, "get_tweet_by_id")) is expected


def test_twikit_rate_limit_carries_the_reset() -> None:
    twikit = pytest.importorskip("twikit", reason=NO_TWIKIT)
    exc = twikit.errors.TooManyRequests("slow down", headers={"x-rate-limit-reset": "1767269700"})
    error = translate_twikit_error(exc, "search_tweet")
    assert isinstance(error, TwitterRateLimited)
    assert error.reset_at == datetime(2026, 1, 1, 12, 15, tzinfo=UTC)


def forbidden(body: bytes) -> tweepy.Forbidden:
    response = requests.Response()
    response.status_code = 403
    response.reason = "Forbidden"
    response.raw = io.BytesIO(body)
    return tweepy.Forbidden(response)


def test_tweepy_duplicate_content_is_told_apart_from_other_refusals() -> None:
    v2 = b'{"detail": "You are not allowed to create a Tweet with duplicate content.",'
    v2 += b' "title": "Forbidden", "status": 403}'
    v1 = b'{"errors": [{"code": 187, "message": "Status is a duplicate."}]}'
    other = b'{"detail": "You are not permitted to perform this action.", "status": 403}'
    assert type(translate_tweepy_error(forbidden(v2), "create_tweet")) is TwitterDuplicate
    assert type(translate_tweepy_error(forbidden(v1), "create_tweet")) is TwitterDuplicate
    assert type(translate_tweepy_error(forbidden(other), "create_tweet")) is TwitterRejected


def test_a_post_whose_answer_was_lost_has_an_unknown_outcome() -> None:
    timeout = TimeoutError()
    assert type(translate_tweepy_error(timeout, "create_tweet")) is TwitterOutcomeUnknown
    assert type(translate_tweepy_error(timeout, "get_users_mentions")) is TwitterTransientError
    dropped = aiohttp.ServerDisconnectedError()
    assert type(translate_tweepy_error(dropped, "create_tweet")) is TwitterOutcomeUnknown


def test_twikit_post_timeouts_have_an_unknown_outcome_but_a_refused_connection_not() -> None:
    pytest.importorskip("twikit", reason=NO_TWIKIT)
    read_timeout = httpx.ReadTimeout("no answer")
    assert type(translate_twikit_error(read_timeout, "create_tweet")) is TwitterOutcomeUnknown
    refused = httpx.ConnectError("connection refused")
    assert type(translate_twikit_error(refused, "create_tweet")) is TwitterTransientError


def test_tweepy_pages_carry_xs_next_token() -> None:
    transport = TweepyTransport(client=None)
    tweet = tweepy.Tweet(
        {
            "id": "1001",
            "text": "@ada_bot hi",
            "author_id": "7",
            "conversation_id": "1001",
            "created_at": "2025-01-01T12:00:00.000Z",
            "edit_history_tweet_ids": ["1001"],
        }
    )
    user = tweepy.User({"id": "7", "username": "bob", "name": "Bob"})
    meta = {"next_token": "7140dibdnow9c7btw", "result_count": 1}
    page = transport.page(tweepy.Response([tweet], {"users": [user]}, [], meta))
    assert page.next_token == "7140dibdnow9c7btw"
    assert [(t.id, t.author_username) for t in page.tweets] == [(1001, "bob")]
    last = transport.page(tweepy.Response(None, {}, [], {"result_count": 0}))
    assert last == TweetPage([], None)
