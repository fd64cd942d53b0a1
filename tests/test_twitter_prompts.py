"""The bot's prompt templates render with the values the bot passes (StrictUndefined)."""

from __future__ import annotations

from datetime import UTC, datetime

from liz.prompts.templates import default_templates
from liz.twitter.transport import Tweet

NOW = datetime(2025, 1, 1, tzinfo=UTC)
PARENT = Tweet(1, "Sencha wins", 7, "dave", 1, NOW)
TWEET = Tweet(2, "@ada_bot settle this", 8, "bob", 1, NOW, 1, ("https://img.example/a.png",))


def test_reply_context_shows_the_chain_then_the_tweet_and_its_images() -> None:
    text = default_templates.render(
        "twitter_reply_context.j2", username="ada_bot", chain=[PARENT], tweet=TWEET
    )
    assert text.index("@dave: Sencha wins") < text.index("@bob wrote to you (@ada_bot)")
    assert "1 image attached" in text


def test_should_respond_offers_the_three_decisions() -> None:
    text = default_templates.render(
        "twitter_should_respond.j2",
        name="Ada",
        username="ada_bot",
        agent_context="Ada loves tea.",
        chain=[],
        tweet=TWEET,
    )
    assert all(word in text for word in ("RESPOND", "IGNORE", "STOP", "settle this"))


def test_post_instruction_names_the_account_and_limit() -> None:
    text = default_templates.render(
        "twitter_post_instruction.j2", username="ada_bot", max_length=280
    )
    assert "@ada_bot" in text and "280" in text
