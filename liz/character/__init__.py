"""Who an agent is: the character model, in Liz's shape.

Files in Eliza's formats are read into this shape by :mod:`liz.character.formats`.
On validation the character's text gets its placeholders filled (``{{user1}}`` with
an example user's name, ``{{agentName}}`` with the character's), and a character
without a ``system`` prompt gets one composed from its name, bio, adjectives and style.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import (
    AliasChoices,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from liz.character.formats import (
    CharacterFileError,
    describe_ignored,
    describe_validation,
    detect_format,
    ignored_fields,
    read_json_object,
    to_liz_shape,
)
from liz.prompts.templates import default_templates
from liz.tools.mcp_config import MCPServerConfig
from liz.types import CamelModel

logger = logging.getLogger(__name__)
# Validation context of a character read from a file: its unused fields are reported there.
FROM_FILE = "from_file"

# Names given to the example users of Eliza's placeholders, in order ({{user1}} is the first).
EXAMPLE_USER_NAMES = ("Alex", "Sam", "Robin", "Jordan", "Casey", "Riley", "Jamie", "Quinn")
AGENT_PLACEHOLDERS = frozenset({"agentname", "agent", "name", "char", "charactername"})
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]+?)(\d*)\s*\}\}")
_USER_PLACEHOLDERS = frozenset({"user", "name", "sendername"})


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
    """Who an agent is: Liz's fields; unknown fields are kept in ``model_extra``.

    ``system`` may be left out: a prompt is then composed from the name, bio,
    adjectives and style, so an agent never runs on an empty system prompt.
    """

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
    # MCP servers whose tools the agent uses, by name (Claude Desktop's mcpServers shape).
    mcp_servers: dict[str, MCPServerConfig] = Field(default_factory=dict)

    _system_composed: bool = PrivateAttr(default=False)

    @model_validator(mode="after")
    def _name_unknown_fields(self, info: ValidationInfo) -> Character:
        """A name that is no field of a character (``sytem=``) is kept in ``model_extra``
        and named in one warning; a file's are named with its path (``from_json_file``)."""
        if self.model_extra and not (info.context or {}).get(FROM_FILE):
            logger.warning(
                "character %r: liz does not use the fields %s",
                self.agent_id,
                describe_ignored(self.model_extra),
            )
        return self

    _split = field_validator("bio", "lore", "post_examples", "topics", "adjectives", mode="before")(
        _as_list
    )

    @model_validator(mode="after")
    def _speak_as_itself(self) -> Character:
        fill = PlaceholderFiller(self.name)
        self.system = fill(self.system)
        for field in ("bio", "lore", "post_examples", "topics", "adjectives"):
            setattr(self, field, [fill(line) for line in getattr(self, field)])
        for rules in (self.style.all, self.style.chat, self.style.post):
            rules[:] = [fill(rule) for rule in rules]
        for conversation in self.message_examples:
            for message in conversation:
                message.user = fill(message.user)
                message.content.text = fill(message.content.text)
        if not self.system.strip():
            self.system = compose_system_prompt(self)
            self._system_composed = True
        return self

    @property
    def system_was_composed(self) -> bool:
        """Whether ``system`` was composed by liz rather than written in the character."""
        return self._system_composed

    @classmethod
    def from_json_file(cls, path: str | Path) -> Character:
        """Load a character from a JSON file in Liz's format or any of Eliza's.

        Raises :class:`liz.character.formats.CharacterFileError` (a ``ValueError``)
        naming the file and what is missing when the file cannot be understood; the
        fields it has that liz does not use are named in one warning.
        """
        read = read_character_file(Path(path))
        if read.ignored:
            logger.warning(
                "%s: liz does not use the fields %s", read.path, describe_ignored(read.ignored)
            )
        return read.character


class PlaceholderFiller:
    """Fills Eliza's placeholders: users get example names, the agent gets its own name.

    ``{{user1}}``, ``{{name1}}`` and ``{{user}}`` become the first example user,
    ``{{user2}}`` the second, and so on; ``{{agentName}}``, ``{{agent}}``, ``{{char}}``
    and ``{{name}}`` become the character's name. Other placeholders stay as written.
    """

    def __init__(self, agent_name: str) -> None:
        self.agent_name = agent_name
        self.user_names = [name for name in EXAMPLE_USER_NAMES if name != agent_name]

    def __call__(self, text: str) -> str:
        if "{{" not in text:
            return text
        return _PLACEHOLDER.sub(self._replacement, text)

    def _replacement(self, match: re.Match[str]) -> str:
        word, number = match.group(1).lower(), match.group(2)
        if not number and word in AGENT_PLACEHOLDERS:
            return self.agent_name
        if word in _USER_PLACEHOLDERS:
            index = int(number) - 1 if number else 0
            if 0 <= index < len(self.user_names):
                return self.user_names[index]
            return f"User {number}"
        return match.group(0)


def compose_system_prompt(character: Character) -> str:
    """A system prompt for a character that has none: its name, bio, adjectives and style."""
    return default_templates.render(
        "character_system.j2",
        name=character.name,
        bio=character.bio,
        adjectives=character.adjectives,
        style=character.style.all + character.style.chat,
    )


@dataclass(frozen=True)
class CharacterFile:
    """A character read from a file, with the format it was in and the fields liz ignores."""

    path: Path
    format: str
    character: Character
    ignored: tuple[str, ...]


def read_character_file(path: Path) -> CharacterFile:
    """Read and understand one character file; :class:`CharacterFileError` when it cannot be."""
    return understand_character(read_json_object(path), path)


def understand_character(data: dict[str, Any], path: Path) -> CharacterFile:
    """A character from the parsed ``data`` of ``path``, in any of the formats liz reads."""
    liz_data, problems = to_liz_shape(data)
    character = None
    try:
        character = Character.model_validate(liz_data, context={FROM_FILE: True})
    except ValidationError as exc:
        problems += describe_validation(exc)
    if problems or character is None:
        raise CharacterFileError(f"{path}: not a valid character file: {'; '.join(problems)}")
    return CharacterFile(path, detect_format(data), character, ignored_fields(data))
