"""What every input must be, whoever sends it (HTTP, the CLI, the X bot).

Ids and text are stored and shown to the LLM, so they must be valid Unicode that a
database takes (no lone surrogates, no NUL) with something visible in them (not only
spaces or invisible characters such as U+200B). Ids also go on one line in prompts,
so they hold no control characters or line breaks. Image URLs are checked by
:mod:`liz.runtime.image_urls` and only travel with inputs of type ``text_and_image``.
"""

from __future__ import annotations

import re
import unicodedata

from liz.runtime.image_urls import MAX_IMAGE_URLS, image_url_problem
from liz.types import InputObject, InputType

MAX_ID_LENGTH = 256
MAX_TEXT_LENGTH = 100_000

_SURROGATE = re.compile("[\ud800-\udfff]")
# In text: the C0 controls but tab, line feed and carriage return, and DEL.
_TEXT_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# In ids: every control character and the Unicode line and paragraph separators.
_ID_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Categories that show nothing on their own: spaces, separators, controls, format
# characters (U+200B, U+2060, U+FEFF, bidi marks), unassigned, and combining marks.
_INVISIBLE_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn", "Mn", "Me"})
# Letters and symbols that render as blank: Hangul fillers and the braille blank.
_BLANK_CHARACTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def has_visible_character(text: str) -> bool:
    """True when ``text`` shows something: not only spaces or invisible characters."""
    return any(
        character not in _BLANK_CHARACTERS
        and unicodedata.category(character) not in _INVISIBLE_CATEGORIES
        for character in text
    )


def _codepoint(match: re.Match[str]) -> str:
    return f"U+{ord(match.group()):04X}"


def unicode_problem(text: str, *, control: re.Pattern[str] = _TEXT_CONTROL) -> str | None:
    """What makes ``text`` unstorable or unsafe, or None."""
    if surrogate := _SURROGATE.search(text):
        return (
            f"contains a lone surrogate ({_codepoint(surrogate)}), which is not valid Unicode; "
            "send UTF-8, or \\u escapes in pairs"
        )
    if character := control.search(text):
        return f"contains the control character {_codepoint(character)}; remove it"
    return None


def id_problem(value: str) -> str | None:
    """What is wrong with ``value`` as a userId, agentId or roomId, or None."""
    if len(value) > MAX_ID_LENGTH:
        return f"is {len(value)} characters long; at most {MAX_ID_LENGTH} are accepted"
    if problem := unicode_problem(value, control=_ID_CONTROL):
        return problem
    if not has_visible_character(value):
        return "has no visible characters (only spaces or invisible ones such as U+200B)"
    if value in (".", ".."):
        return f"cannot be {value!r}: URLs read it as a step between folders; add a character"
    return None


def input_problems(input: InputObject) -> list[str]:
    """Everything wrong with ``input``, each saying how to fix it; empty when it is fine."""
    problems: list[str] = []
    for name, value in (("userId", input.user_id), ("agentId", input.agent_id)):
        if not value.strip():
            problems.append(f"{name} is required")
        elif problem := id_problem(value):
            problems.append(f"{name} {problem}")
    if input.room_id and (problem := id_problem(input.room_id)):
        problems.append(f"roomId {problem}")
    problems.extend(_text_problems(input))
    problems.extend(_image_problems(input))
    return problems


def _text_problems(input: InputObject) -> list[str]:
    text = input.text or ""
    if not text.strip():
        return [f"text is required for inputs of type '{input.type.value}'"]
    if len(text) > MAX_TEXT_LENGTH:
        return [f"text is {len(text)} characters long; at most {MAX_TEXT_LENGTH} are accepted"]
    if problem := unicode_problem(text):
        return [f"text {problem}"]
    if not has_visible_character(text):
        return ["text has no visible characters (only spaces or invisible ones such as U+200B)"]
    return []


def _image_problems(input: InputObject) -> list[str]:
    urls = input.image_urls
    if input.type is InputType.TEXT:
        if urls:
            return [
                "imageUrls are only read for inputs of type 'text_and_image'; "
                "set type to 'text_and_image' or leave imageUrls out"
            ]
        return []
    if not urls:
        return ["imageUrls must hold at least one URL for type 'text_and_image'"]
    if len(urls) > MAX_IMAGE_URLS:
        return [f"imageUrls holds {len(urls)} URLs; at most {MAX_IMAGE_URLS} are accepted"]
    return [
        f"imageUrls[{index}] {problem}"
        for index, url in enumerate(urls)
        if (problem := image_url_problem(url)) is not None
    ]
