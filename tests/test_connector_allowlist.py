"""An allowlist of user ids, given comma-separated in the environment, for each chat bot."""

from __future__ import annotations

import pytest

from liz.config.loading import load_settings
from liz.discord.settings import DiscordSettings
from liz.errors import UsageError
from liz.telegram.settings import TelegramSettings


@pytest.mark.parametrize(
    ("variable", "settings"),
    [("TELEGRAM_ALLOWED_USERS", TelegramSettings), ("DISCORD_ALLOWED_USERS", DiscordSettings)],
)
def test_the_allowlist_is_read_comma_separated_and_a_bad_id_named(
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    settings: type[TelegramSettings] | type[DiscordSettings],
) -> None:
    monkeypatch.chdir("/")  # no .env file
    monkeypatch.delenv(variable, raising=False)
    assert load_settings(settings).allowed_users == []
    monkeypatch.setenv(variable, " 7, 70 ,")
    assert load_settings(settings).allowed_users == [7, 70]
    monkeypatch.setenv(variable, "7, @ada")
    with pytest.raises(UsageError, match=f"bad setting {variable}"):
        load_settings(settings)
