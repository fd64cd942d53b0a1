"""Character files as others write them, read into Liz's shape.

Six formats are understood, told apart by their fields:

- ``elizaos``: elizaOS today, ``messageExamples: [{"examples": [{"name", "content"}]}]``;
- ``eliza-v1``: elizaOS 1.0, ``messageExamples: [[{"name", "content"}]]``;
- ``eliza-v0``: Eliza 0.x, ``messageExamples: [[{"user", "content"}]]`` with ``lore``,
  ``clients``, ``modelProvider``;
- ``characterfile``: the first Eliza character files, where a message's text is
  ``content.content`` and ``bio`` is one string;
- ``liz``: Liz's ``Character`` (``name``, ``system``, ``bio``, ``lore``, ...);
- ``liz-profile``: the character file in Liz's repository (``description``,
  ``traits``, ``background``, ``voice``, ``preferences``).

Fields liz has no use for (``knowledge``, ``plugins``, ``settings``, ...) are kept on
the character (``model_extra``) and named in :attr:`CharacterFile.ignored`.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from liz.errors import UsageError

FORMATS = {
    "elizaos": "elizaOS (message examples in groups)",
    "eliza-v1": "elizaOS 1.0 (speakers as name)",
    "eliza-v0": "Eliza 0.x (speakers as user)",
    "characterfile": "the first Eliza character files (content.content)",
    "liz": "Liz",
    "liz-profile": "Liz's profile file (description, traits, background, voice)",
}
ID_FIELDS = ("agentId", "agent_id", "id")
USED_FIELDS = frozenset(
    {
        *ID_FIELDS,
        *("name", "system", "system_prompt", "bio", "lore", "topics", "style", "adjectives"),
        *("messageExamples", "message_examples", "postExamples", "post_examples"),
        *("description", "traits", "background", "voice", "preferences"),
        "mcpServers",
    }
)
# Fields only Eliza writes: a file with one of them is Eliza's, not Liz's.
ELIZA_ONLY_FIELDS = frozenset(
    {"clients", "modelProvider", "plugins", "settings", "secrets", "knowledge", "people"}
    | {"templates", "username", "documents", "imageModelProvider", "advancedPlanning"}
)
PROFILE_FIELDS = ("description", "traits", "background", "voice", "preferences")
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


class CharacterFileError(UsageError, ValueError):
    """A character file liz cannot understand; the message names the file and what is missing."""


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; :class:`CharacterFileError` when there is none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CharacterFileError(f"{path}: cannot be read: {exc.strerror}") from exc
    except ValueError as exc:
        raise CharacterFileError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise CharacterFileError(f"{path}: a character file must hold a JSON object")
    return data


def to_liz_shape(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` in any of :data:`FORMATS` in Liz's shape, and what is wrong with it."""
    problems: list[str] = []
    liz_data = _to_liz_shape(data, problems)
    return liz_data, problems + _missing(liz_data)


def describe_validation(exc: ValidationError) -> list[str]:
    """The problems pydantic found that :func:`to_liz_shape` did not already name."""
    return [_describe(error) for error in exc.errors() if not _named_above(error)]


def describe_ignored(fields: Iterable[str]) -> str:
    """``fields`` for a warning, each misspelling of a field liz uses with that field:
    ``sytem (did you mean system?), plugins``."""
    described = []
    for name in fields:
        known = sorted(USED_FIELDS - ELIZA_ONLY_FIELDS)
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        described.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return ", ".join(described)


def ignored_fields(data: dict[str, Any]) -> tuple[str, ...]:
    """The fields of ``data`` that liz does not use (and that hold something)."""
    return tuple(key for key, value in data.items() if key not in USED_FIELDS and value)


def detect_format(data: dict[str, Any]) -> str:
    """Which of :data:`FORMATS` ``data`` is written in."""
    examples = data.get("messageExamples", data.get("message_examples"))
    groups = examples if isinstance(examples, list) else []
    if any(isinstance(group, dict) and "examples" in group for group in groups):
        return "elizaos"
    lines = [line for group in groups if isinstance(group, list) for line in group]
    lines = [line for line in lines if isinstance(line, dict)]
    if any(_old_content(line.get("content")) for line in lines):
        return "characterfile"
    if any("name" in line and "user" not in line for line in lines):
        return "eliza-v1"
    if any(key in data for key in PROFILE_FIELDS) and "bio" not in data:
        return "liz-profile"
    if "agentId" in data or "routes" in data:
        return "liz"
    if ELIZA_ONLY_FIELDS & data.keys() or ("lore" in data and "system" not in data):
        return "eliza-v0"
    return "liz"


def _to_liz_shape(data: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    shaped = {key: value for key, value in data.items() if key not in PROFILE_FIELDS}
    if not any(key in data for key in ID_FIELDS) and isinstance(data.get("name"), str):
        shaped["agentId"] = _NOT_SLUG.sub("-", data["name"].lower()).strip("-")
    if not data.get("system") and isinstance(data.get("system_prompt"), str):
        shaped["system"] = data["system_prompt"]
    key = "messageExamples" if "messageExamples" in data else "message_examples"
    if key in data:
        shaped[key] = _conversations(data[key], problems)
    _add_profile(data, shaped)
    return shaped


def _conversations(examples: Any, problems: list[str]) -> Any:
    """Eliza's example conversations, in any of its shapes, as Liz's list of lists."""
    if not isinstance(examples, list):
        return examples  # the model names the problem
    conversations = []
    for index, group in enumerate(examples):
        if isinstance(group, dict) and "examples" in group:
            group = group["examples"]
        if not isinstance(group, list):
            problems.append(
                f"messageExamples[{index}] is not a conversation: "
                'expected a list of {"name": ..., "content": {"text": ...}}'
            )
            continue
        conversations.append([_message(line) for line in group])
    return conversations


def _message(line: Any) -> Any:
    if not isinstance(line, dict) or "content" not in line:
        return line  # the model names the problem
    content = line["content"]
    if isinstance(content, str):
        content = {"text": content}
    elif isinstance(content, dict) and _old_content(content):
        content = {key: value for key, value in content.items() if key != "content"}
        content["text"] = line["content"]["content"]
    return {**line, "content": content}


def _old_content(content: Any) -> bool:
    return isinstance(content, dict) and "text" not in content and "content" in content


def _add_profile(data: dict[str, Any], shaped: dict[str, Any]) -> None:
    """Liz's profile fields become bio lines, adjectives and style rules."""
    bio = _strings(shaped.get("bio"))
    if isinstance(data.get("description"), str) and data["description"].strip():
        bio.insert(0, data["description"])
    bio += _described(data.get("background"))
    if bio:
        shaped["bio"] = bio
    traits = _strings(data.get("traits"))
    if traits:
        shaped["adjectives"] = _strings(shaped.get("adjectives")) + traits
    voice, preferences = _described(data.get("voice")), _described(data.get("preferences"))
    if voice or preferences:
        style = dict(shaped.get("style") or {})
        style["all"] = _strings(style.get("all")) + voice
        style["chat"] = _strings(style.get("chat")) + preferences
        shaped["style"] = style


def _described(value: Any) -> list[str]:
    """``{"tone": "warm", "expertise": ["a", "b"]}`` as ``["tone: warm", "expertise: a, b"]``."""
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            words = _CAMEL_HUMP.sub(" ", str(key)).lower()
            text = ", ".join(_strings(item)) if isinstance(item, list) else str(item)
            lines.append(f"{words}: {text}")
        return lines
    return _strings(value)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [str(item) for item in value if str(item).strip()]
    return []


def _missing(data: dict[str, Any]) -> list[str]:
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        return ["`name` is missing: give the character's name as a string"]
    if not any(data.get(key) for key in ("system", "bio", "lore")):
        return [
            f"nothing says who {name} is: add `system` (a prompt), `bio` (Eliza) "
            "or `description` (Liz)"
        ]
    return []


def _named_above(error: Any) -> bool:
    """A missing name (and so id) is already named by :func:`_missing`, in words."""
    return error["type"] == "missing" and tuple(error["loc"]) in (("name",), ("agentId",))


def _describe(error: Any) -> str:
    where = ""
    for part in error["loc"]:
        where += f"[{part}]" if isinstance(part, int) else f".{part}" if where else str(part)
    got = json.dumps(error.get("input"), default=str)
    if len(got) > 60:
        got = got[:57] + "..."
    return f"`{where}`: {error['msg']} (got {got})"
