"""How fact text is compared: one normalisation for hashing, subjects and keyword terms."""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata

_SPACES = re.compile(r"\s+")
_WORDS = re.compile(r"[^\W_]+", re.UNICODE)

# Words that match nearly every fact, left out of keyword queries ("what is my name"
# should not match every fact holding "is"). The last line is what contractions leave
# as words: the "s" of "User's" is in nearly every fact.
_STOP_WORDS_TEXT = """
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves user users
d ll m re s t ve
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


def normalize_fact_text(text: str) -> str:
    """The text two facts must share to count as exact duplicates.

    Case, Unicode form, runs of whitespace and a final full stop do not make a
    fact different; anything else (a digit, a word) does.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _SPACES.sub(" ", folded).strip().rstrip(".").strip()


@functools.lru_cache(maxsize=8192)
def fact_hash(text: str) -> str:
    """SHA-256 of the normalised text, hex: the duplicate check before any LLM call.

    Kept for the texts met most recently: a search breaks ties between its keyword
    hits by hash, and would otherwise hash the same texts again on every search.
    """
    return hashlib.sha256(normalize_fact_text(text).encode("utf-8")).hexdigest()


def normalize_subject(subject: str) -> str:
    """Subjects are compared loosely: "The user", "user" and "USER " are one subject."""
    folded = _SPACES.sub(" ", unicodedata.normalize("NFKC", subject).casefold()).strip()
    for article in ("the ", "a ", "an "):
        if folded.startswith(article):
            folded = folded[len(article) :]
    return folded or "user"


def keyword_terms(query: str, *, limit: int = 16) -> list[str]:
    """Distinct lower-case words of a query, stop words dropped, in order of appearance.

    Lower-cased, not case-folded: FTS5 and PostgreSQL's ``simple`` configuration
    lower-case too, and folding "Straße" to "strasse" would miss the stored word.
    """
    terms: list[str] = []
    for word in _WORDS.findall(unicodedata.normalize("NFKC", query).lower()):
        if word not in STOP_WORDS and word not in terms:
            terms.append(word)
        if len(terms) == limit:
            break
    return terms
