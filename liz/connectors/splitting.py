"""Cutting a reply into messages a chat platform takes: under its limit, at natural breaks.

Each platform passes its own limit. Lengths are counted in UTF-16 code units, as
Telegram counts them; a platform that counts characters (Discord) gets parts that
are, if anything, shorter. A reply is cut at the last paragraph break that fits,
else the last sentence end, else the last space, and only a word longer than a
whole message is cut inside. Only the whitespace at each cut is dropped: every
word of the reply is sent, in order.
"""

from __future__ import annotations

import re

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\n")
_SPACE = re.compile(r"\s+")


def utf16_length(text: str) -> int:
    """The length Telegram counts: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def split_message(text: str, limit: int) -> list[str]:
    """``text`` as messages of at most ``limit`` UTF-16 units; none for a blank text."""
    rest = text.strip()
    parts: list[str] = []
    while utf16_length(rest) > limit:
        cut = _cut(rest, limit)
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        parts.append(rest)
    return parts


def _cut(text: str, limit: int) -> int:
    """Where to end the first message: an index into ``text``, past at least one character."""
    fits = _longest_prefix(text, limit)
    window = text[: fits + 1]  # a break right after the prefix still ends it within the limit
    for pattern, least in ((_PARAGRAPH, fits // 2), (_SENTENCE, fits // 2), (_SPACE, 1)):
        ends = [match.start() for match in pattern.finditer(window) if match.start() >= least]
        if ends:
            return ends[-1]
    return fits


def _longest_prefix(text: str, limit: int) -> int:
    """How many characters of ``text`` fit in ``limit`` UTF-16 units (at least one)."""
    used = 0
    for index, char in enumerate(text):
        used += 2 if ord(char) > 0xFFFF else 1
        if used > limit:
            return max(1, index)
    return len(text)
