"""Splitting long replies into threads that X accepts, by X's weighted length."""

from __future__ import annotations

import pytest

from liz.errors import UsageError
from liz.twitter.splitter import split_into_tweets, tweet_length


def words_of(tweets: list[str]) -> list[str]:
    return " ".join(tweets).split()


def test_short_text_is_one_tweet_unchanged() -> None:
    assert split_into_tweets("  Hello, world.  ") == ["Hello, world."]


def test_blank_text_gives_no_tweets() -> None:
    assert split_into_tweets(" \n ") == []


def test_long_text_splits_at_sentences_and_keeps_a_trailing_fragment() -> None:
    text = "This sentence is about forty characters. " * 12 + "and a tail with no stop"
    tweets = split_into_tweets(text)
    assert len(tweets) >= 2
    assert all(tweet_length(t) <= 280 for t in tweets)
    assert words_of(tweets) == text.split()
    # Whole sentences stay together: every tweet but the last ends a sentence.
    assert all(t.endswith(".") for t in tweets[:-1])
    assert tweets[-1].endswith("and a tail with no stop")


def test_a_word_longer_than_a_tweet_is_cut_into_pieces_that_fit() -> None:
    word = "x" * 700
    tweets = split_into_tweets(f"Look: {word} done")
    assert all(tweet_length(t) <= 280 for t in tweets)
    assert "".join(tweets).replace(" ", "") == f"Look:{word}done"


def test_urls_count_23_so_long_urls_are_never_cut() -> None:
    url = "https://example.com/" + "a" * 200
    assert tweet_length(url) == 23
    text = " ".join([f"see {url}"] * 20)
    tweets = split_into_tweets(text)
    assert all(tweet_length(t) <= 280 for t in tweets)
    assert sum(t.count(url) for t in tweets) == 20
    # 20 x (3 + 1 + 23) + separators is ~560: two or three tweets, not one per URL.
    assert len(tweets) <= 3


def test_cjk_counts_double() -> None:
    sentence = "日本語の文章です。"  # 9 characters, 8 CJK + full stop, all weight 2
    assert tweet_length(sentence) == 18
    tweets = split_into_tweets(sentence * 40)
    assert all(tweet_length(t) <= 280 for t in tweets)
    assert "".join(tweets) == sentence * 40
    assert all(t.endswith("。") for t in tweets[:-1])


def test_cjk_without_any_punctuation_is_cut_by_weight() -> None:
    text = "漢" * 300
    tweets = split_into_tweets(text)
    assert [len(t) for t in tweets] == [140, 140, 20]


def test_emoji_sequences_are_never_cut_in_the_middle() -> None:
    family = "👨\u200d👩\u200d👧"  # one emoji of five code points, weight 2
    text = family * 200
    tweets = split_into_tweets(text)
    assert all(tweet_length(t) <= 280 for t in tweets)
    assert all(t.count("\u200d") == 2 * t.count("👨") for t in tweets)
    assert "".join(tweets) == text


def test_paragraphs_are_preferred_break_points() -> None:
    first = "First paragraph. " * 10
    second = "Second paragraph. " * 10
    tweets = split_into_tweets(first.strip() + "\n\n" + second.strip())
    assert tweets == [first.strip(), second.strip()]


def test_custom_limit_is_respected() -> None:
    tweets = split_into_tweets("word " * 100, max_length=50)
    assert all(tweet_length(t) <= 50 for t in tweets)
    assert words_of(tweets) == ["word"] * 100


def test_limit_too_small_is_refused_with_a_fix() -> None:
    with pytest.raises(UsageError, match="at least 30"):
        split_into_tweets("hello", max_length=10)


def test_a_letter_under_hundreds_of_combining_marks_still_fits() -> None:
    text = "a" + "\u0301" * 400 + " end"
    tweets = split_into_tweets(text)
    assert all(0 < tweet_length(t) <= 280 for t in tweets)
    assert "".join(tweets).replace(" ", "") == text.replace(" ", "")
