"""The real transports' error translation: library exceptions become ``liz.twitter.errors``."""

from __future__ import annotations

from datetime import UTC, datetime

import requests
import tweepy

from liz.twitter.api_transport import translate_tweepy_error
from liz.twitter.errors import TwitterRateLimited


def http_response(status: int, headers: dict[str, str]) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response.reason = "Too Many Requests"
    response._content = b'{"title": "Too Many Requests", "status": 429}'
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
