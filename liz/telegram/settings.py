"""The Telegram bot's settings: every one is a ``TELEGRAM_*`` environment variable."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from liz.connectors.allowlist import AllowedUsers


class TelegramSettings(BaseSettings):
    """Settings for ``liz telegram run``: field ``bot_token`` is ``TELEGRAM_BOT_TOKEN``."""

    model_config = SettingsConfigDict(
        env_prefix="TELEGRAM_", env_file=".env", extra="ignore", env_ignore_empty=True
    )

    # From @BotFather. It is in every request's URL, so it is never logged or traced.
    bot_token: SecretStr | None = None
    # The Bot API server's root: requests go to {api_url}/bot{token}/{method}.
    api_url: str = "https://api.telegram.org"
    # When set, only these Telegram user ids get answers; everyone else, no reply and
    # no LLM call. Comma-separated.
    allowed_users: AllowedUsers = Field(default_factory=list)
    # Webhook mode (POST /telegram/{agentId} on `liz serve`): the secret Telegram sends
    # in X-Telegram-Bot-Api-Secret-Token, as given to setWebhook's secret_token.
    webhook_secret: SecretStr | None = None
    # How long one getUpdates waits for a message (long polling), in seconds.
    poll_timeout: int = Field(default=25, ge=0, le=50)

    @field_validator("api_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL, such as https://api.telegram.org")
        return value.rstrip("/")
