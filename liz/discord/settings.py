"""The Discord bot's settings: every one is a ``DISCORD_*`` environment variable."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from liz.connectors.allowlist import AllowedUsers


class DiscordSettings(BaseSettings):
    """Settings for ``liz discord run``: field ``bot_token`` is ``DISCORD_BOT_TOKEN``."""

    model_config = SettingsConfigDict(
        env_prefix="DISCORD_", env_file=".env", extra="ignore", env_ignore_empty=True
    )

    # The bot's token, from the developer portal (Bot > Reset Token). Never logged.
    bot_token: SecretStr | None = None
    # When set, only these Discord user ids get answers; everyone else, no reply and
    # no LLM call. Comma-separated.
    allowed_users: AllowedUsers = Field(default_factory=list)
    # How long one read waits for a message from the gateway, in seconds.
    poll_timeout: float = Field(default=5.0, gt=0, le=60)
    # An HTTP proxy every call to Discord goes through, REST and gateway alike
    # (``http://host:port``); None: straight to Discord.
    proxy: str | None = None
