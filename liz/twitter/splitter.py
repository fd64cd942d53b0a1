"""Split a long reply into a thread of tweets, each within X's weighted length.

X counts length by weight, not characters: a URL counts 23 whatever its length,
CJK characters and emoji count 2, most Latin text 1. ``twitter-text-parser``
implements X's published rules (twitter-text v3 configuration), so lengths here
are the ones X enforces.

The splitter keeps every character of the input (except the whitespace it
splits at): it prefers paragraph and sentence boundaries, falls back to word
boundaries, and cuts a word longer than a whole tweet into pieces, never inside
an emoji or before a combining mark.

``twitter_text`` is imported on first use: it compiles its URL and emoji patterns
as it loads, which every ``liz`` command would pay, since the CLI's Twitter
commands import this package.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from liz.errors import UsageError

MAX_TWEET_LENGTH = 280
# The shortest limit that still fits one URL (23) and a few words.
MIN_TWEET_LENGTH = 30

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
# After . ! ? … followed by whitespace, or right after a CJK full stop / mark.
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？])\s*")
_UNBREAKABLE_BEFORE = {"\u200d", "\ufe0e", "\ufe0f"}


def tweet_length(text: str) -> int:
    """The weighted length X gives ``text`` (URLs 23, CJK and emoji 2)."""
    from twitter_text import parse_tweet

    return int(parse_tweet(text).weightedLength)


@dataclass(frozen=True)
class _Atom:
    text: str
    separator: str  # what joins it to the atom before it in the same tweet


def split_into_tweets(text: str, max_length: int = MAX_TWEET_LENGTH) -> list[str]:
    """The tweets of a thread holding ``text``, in order; ``[]`` for blank text.

    >>> [len(tweet) for tweet in split_into_tweets("First sentence. " * 30)]  # whole sentences
    [271, 207]
    """
    if max_length < MIN_TWEET_LENGTH:
        raise UsageError(
            f"a tweet length limit of {max_length} is too small; use at least "
            f"{MIN_TWEET_LENGTH} (X allows {MAX_TWEET_LENGTH})"
        )
    text = text.strip()
    if not text:
        return []
    if tweet_length(text) <= max_length:
        return [text]
    tweets: list[str] = []
    current = ""
    for paragraph in _paragraphs(text):
        whole = current + "\n\n" + paragraph if current else paragraph
        if tweet_length(whole) <= max_length:
            current = whole
            continue
        # The paragraph does not fit beside what came before: it starts a tweet.
        if current:
            tweets.append(current)
            current = ""
        for atom in _atoms(paragraph, max_length):
            candidate = current + atom.separator + atom.text if current else atom.text
            if tweet_length(candidate) <= max_length:
                current = candidate
            else:
                tweets.append(current)
                current = atom.text
    if current:
        tweets.append(current)
    return tweets


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]


def _atoms(paragraph: str, max_length: int) -> list[_Atom]:
    """Pieces of a paragraph that each fit a tweet: sentences, else words, else word pieces."""
    atoms: list[_Atom] = []
    for sentence, separator in _sentences(paragraph):
        if tweet_length(sentence) <= max_length:
            atoms.append(_Atom(sentence, separator))
            continue
        for w_index, word in enumerate(sentence.split()):
            word_separator = separator if w_index == 0 else " "
            if tweet_length(word) <= max_length:
                atoms.append(_Atom(word, word_separator))
                continue
            for c_index, chunk in enumerate(_cut_word(word, max_length)):
                atoms.append(_Atom(chunk, word_separator if c_index == 0 else ""))
    return atoms


def _sentences(paragraph: str) -> list[tuple[str, str]]:
    """Each sentence with the whitespace that came before it: "" first, then " ", "\n" or ""."""
    sentences: list[tuple[str, str]] = []
    start, before = 0, ""
    for boundary in _SENTENCE_END.finditer(paragraph):
        sentence = paragraph[start : boundary.start()]
        if sentence.strip():
            sentences.append((sentence, before if sentences else ""))
            gap = boundary.group()
            before = "\n" if "\n" in gap else (" " if gap else "")
        start = boundary.end()
    if paragraph[start:].strip():
        sentences.append((paragraph[start:], before if sentences else ""))
    return sentences


def _cut_word(word: str, max_length: int) -> list[str]:
    """Cut a word longer than a tweet into the longest pieces that fit, at safe points."""
    pieces: list[str] = []
    rest = word
    while rest:
        if tweet_length(rest) <= max_length:
            pieces.append(rest)
            break
        cut = _longest_fitting_prefix(rest, max_length)
        pieces.append(rest[:cut])
        rest = rest[cut:]
    return pieces


def _longest_fitting_prefix(word: str, max_length: int) -> int:
    cut = _longest_prefix_at(word, _safe_cut_points(word), max_length)
    if cut is None:
        # No safe point fits (a letter under hundreds of combining marks): a tweet
        # X accepts beats a mark kept with its letter.
        cut = _longest_prefix_at(word, list(range(1, len(word))), max_length)
    return cut or 1


def _longest_prefix_at(word: str, points: list[int], max_length: int) -> int | None:
    """The largest of ``points`` where the prefix of ``word`` fits, or None if none does."""
    # Weight grows with the prefix (a URL caps at 23, never shrinks it back), so
    # binary search over the points finds the longest prefix that fits.
    low, high = 0, len(points) - 1
    best = -1
    while low <= high:
        middle = (low + high) // 2
        if tweet_length(word[: points[middle]]) <= max_length:
            best = middle
            low = middle + 1
        else:
            high = middle - 1
    # A URL prefix can stop matching as a URL when it grows; step back until it fits.
    while best >= 0 and tweet_length(word[: points[best]]) > max_length:
        best -= 1
    return points[best] if best >= 0 else None


def _safe_cut_points(word: str) -> list[int]:
    """Indexes where ``word`` may be cut: not inside an emoji, not before a combining mark."""
    from twitter_text.extract_emojis import extract_emojis_with_indices

    inside_emoji: set[int] = set()
    for emoji in extract_emojis_with_indices(word):
        start, end = emoji["indices"]
        inside_emoji.update(range(start + 1, end))
    points = [
        index
        for index in range(1, len(word))
        if index not in inside_emoji
        and not unicodedata.combining(word[index])
        and word[index] not in _UNBREAKABLE_BEFORE
    ]
    return points or [len(word)]
