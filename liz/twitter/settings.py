"""The bot's settings: every one is a ``TWITTER_*`` environment variable (see ``.env.example``)."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from liz.twitter.splitter import MAX_TWEET_LENGTH, MIN_TWEET_LENGTH

TransportName = Literal["api", "twikit", "fake"]


class TwitterSettings(BaseSettings):
    """Settings for ``liz twitter``: field ``polling_interval`` is ``TWITTER_POLLING_INTERVAL``."""

    model_config = SettingsConfigDict(
        env_prefix="TWITTER_", env_file=".env", extra="ignore", env_ignore_empty=True
    )

    # Which transport talks to X: the official API (tweepy), a web session (twikit), or
    # the in-memory fake (tests, demos).
    transport: TransportName = "api"

    # Official API v2 (developer portal): OAuth 1.0a user context, plus the bearer token.
    api_key: SecretStr | None = None
    api_secret: SecretStr | None = None
    access_token: SecretStr | None = None
    access_secret: SecretStr | None = None
    bearer_token: SecretStr | None = None

    # twikit: the account's own login, and where its session cookies are kept.
    username: str | None = None
    password: SecretStr | None = None
    email: str | None = None
    cookies_file: str = "twitter_cookies.json"

    # Posting: a fixed interval, or a random one between min and max when both are set.
    post_interval_hours: float = Field(default=4.0, gt=0)
    post_interval_min_hours: float | None = Field(default=None, gt=0)
    post_interval_max_hours: float | None = Field(default=None, gt=0)
    post_immediately: bool = False

    # Replying: how often to check mentions (minutes) and who else to answer.
    polling_interval: float = Field(default=5.0, gt=0)
    target_users: Annotated[list[str], NoDecode] = Field(default_factory=list)
    should_respond_check: bool = True
    thread_depth: int = Field(default=5, ge=0)
    # On the very first run (no cursor yet), mentions older than this are not answered.
    first_run_max_age_hours: float = Field(default=24.0, ge=0)
    like_replied: bool = False
    max_reply_attempts: int = Field(default=3, ge=1)
    # A post whose call got no answer (a timeout) and that X does not show: how long the
    # bot keeps looking for it on X before it posts it again (see liz.twitter.outbox).
    unconfirmed_post_wait_minutes: float = Field(default=30.0, ge=0)

    max_tweet_length: int = Field(default=MAX_TWEET_LENGTH, ge=MIN_TWEET_LENGTH)
    dry_run: bool = False

    # Failures: exponential backoff bounds (seconds), and how often a standby
    # process tries to take over the loops (seconds).
    backoff_base_seconds: float = Field(default=30.0, gt=0)
    backoff_max_seconds: float = Field(default=900.0, gt=0)
    leader_retry_seconds: float = Field(default=30.0, gt=0)

    @field_validator("target_users", mode="before")
    @classmethod
    def _split_usernames(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list):
            return [str(name).strip().lstrip("@") for name in value if str(name).strip()]
        return value

    @model_validator(mode="after")
    def _check_interval_bounds(self) -> TwitterSettings:
        low, high = self.post_interval_min_hours, self.post_interval_max_hours
        if (low is None) != (high is None):
            raise ValueError(
                "set both TWITTER_POST_INTERVAL_MIN_HOURS and TWITTER_POST_INTERVAL_MAX_HOURS "
                "for a random interval, or neither for TWITTER_POST_INTERVAL_HOURS"
            )
        if low is not None and high is not None and low > high:
            raise ValueError(
                f"TWITTER_POST_INTERVAL_MIN_HOURS ({low}) is above "
                f"TWITTER_POST_INTERVAL_MAX_HOURS ({high}); swap them"
            )
        return self

    @property
    def has_api_credentials(self) -> bool:
        return all((self.api_key, self.api_secret, self.access_token, self.access_secret))

    @property
    def has_login_credentials(self) -> bool:
        return bool(self.username and self.password)

    def post_interval(self, rng: random.Random) -> timedelta:
        """The wait between two posts: fixed, or drawn between the min and max when both are set."""
        low, high = self.post_interval_min_hours, self.post_interval_max_hours
        if low is not None and high is not None:
            return timedelta(hours=rng.uniform(low, high))
        return timedelta(hours=self.post_interval_hours)
