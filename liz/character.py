"""Who an agent is: the character model, as Liz and Eliza write it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field, field_validator

from liz.types import CamelModel


class MessageContent(CamelModel):
    text: str = ""


class MessageExample(CamelModel):
    """One line of an example conversation. Eliza writes the speaker as `user` or `name`."""

    user: str = Field(validation_alias=AliasChoices("user", "name"))
    content: MessageContent


class Style(CamelModel):
    all: list[str] = Field(default_factory=list)
    chat: list[str] = Field(default_factory=list)
    post: list[str] = Field(default_factory=list)


def _as_list(value: Any) -> Any:
    """Eliza allows a string where Liz has a list of strings."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    return value


class Character(CamelModel):
    """Who an agent is. Loads Liz's format and both of Eliza's; unknown fields are kept."""

    agent_id: str = Field(validation_alias=AliasChoices("agentId", "agent_id", "id"))
    name: str
    system: str = ""
    bio: list[str] = Field(default_factory=list)
    lore: list[str] = Field(default_factory=list)
    message_examples: list[list[MessageExample]] = Field(default_factory=list)
    post_examples: list[str] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    style: Style = Field(default_factory=Style)
    adjectives: list[str] = Field(default_factory=list)

    _split = field_validator("bio", "lore", "post_examples", "topics", "adjectives", mode="before")(
        _as_list
    )

    @classmethod
    def from_json_file(cls, path: str | Path) -> Character:
        """Load a character from a Liz or Eliza JSON file.

        Eliza's files often have no id; the name, lower-cased, is used then.
        """
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a character file must hold a JSON object")
        if not any(key in data for key in ("agentId", "agent_id", "id")) and "name" in data:
            data["agentId"] = str(data["name"]).strip().lower().replace(" ", "-")
        if not data.get("system") and isinstance(data.get("system_prompt"), str):
            data["system"] = data["system_prompt"]
        return cls.model_validate(data)
