"""A reply is cut into messages under the platform's limit (Telegram's: 4,096 UTF-16 units)
at natural breaks."""

from __future__ import annotations

import re

from liz.connectors.splitting import split_message, utf16_length

TELEGRAM = 4096


def words(text: str) -> str:
    return re.sub(r"\s", "", text)


def test_a_short_reply_is_one_message() -> None:
    assert split_message("  Hello there.  ", TELEGRAM) == ["Hello there."]


def test_a_blank_reply_is_no_message() -> None:
    assert split_message(" \n ", TELEGRAM) == []


def test_a_long_reply_is_cut_at_paragraphs_then_sentences_with_nothing_lost() -> None:
    paragraphs = [f"Paragraph {n}. " + "A sentence of some length here. " * 40 for n in range(6)]
    text = "\n\n".join(paragraphs)
    parts = split_message(text, limit=2000)
    assert all(utf16_length(part) <= 2000 for part in parts)
    assert words("".join(parts)) == words(text)
    assert all(part.endswith(".") for part in parts)


def test_emoji_count_twice_as_telegram_counts_them() -> None:
    text = "😀" * 5000  # 10,000 UTF-16 units, no break anywhere
    parts = split_message(text, TELEGRAM)
    assert [utf16_length(part) for part in parts] == [4096, 4096, 1808]
    assert "".join(parts) == text


def test_a_word_longer_than_a_message_is_cut_inside() -> None:
    text = "start " + "x" * 5000 + " end"
    parts = split_message(text, limit=TELEGRAM)
    assert all(utf16_length(part) <= 4096 for part in parts)
    assert words("".join(parts)) == words(text)
