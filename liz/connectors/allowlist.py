"""Who a chat bot answers: ``TELEGRAM_ALLOWED_USERS``, ``DISCORD_ALLOWED_USERS``.

Unset, everyone. Set, only those user ids: the platform module leaves everyone
else's messages out of the inbox, so they get no reply and cost no LLM call.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator
from pydantic_settings import NoDecode


def _comma_separated(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


# A settings field of user ids, given as "7, 70" in the environment.
AllowedUsers = Annotated[list[int], NoDecode, BeforeValidator(_comma_separated)]
