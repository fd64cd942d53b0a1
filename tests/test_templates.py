"""Every built-in prompt renders with the values its caller passes (StrictUndefined)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from liz.prompts.templates import PromptTemplates

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
FACT = SimpleNamespace(text="The user's name is Ann", subject="user")
TWEET = SimpleNamespace(author_username="bob", text="@morgan how do I price?", image_urls=["u"])
PARENT = SimpleNamespace(author_username="morgan", text="Price from value, not cost.")
MEMORY = SimpleNamespace(generator="external", created_at=NOW, text="Hello there", user_id="ann")
ROUTE = SimpleNamespace(name="conversation", description="Talk with the user")

# One entry per template: the values it is rendered with, and a text the result must hold.
SAMPLES: dict[str, tuple[dict[str, Any], str]] = {
    "agent_context.j2": (
        {
            "name": "Morgan",
            "system": "You advise.",
            "bio": ["Ran a bakery"],
            "lore": ["Counts passers-by"],
            "message_examples": [[SimpleNamespace(user="ann", content=SimpleNamespace(text="Hi"))]],
            "post_examples": ["Cash first."],
            "topics": ["pricing"],
            "style": ["brief"],
            "adjectives": ["direct"],
        },
        "Ran a bakery",
    ),
    "character_system.j2": (
        {"name": "Ada", "bio": ["Keeps bees"], "adjectives": ["calm"], "style": ["brief"]},
        "You are Ada.\nKeeps bees",
    ),
    "context.j2": (
        {
            "memories": [MEMORY],
            "facts": [FACT],
            "agent_context": "AGENT",
            "user_input": "What now?",
            "image_urls": [],
        },
        "User ann (2026-11-29 12:00:00 UTC): Hello there",
    ),
    "router.j2": ({"routes": [ROUTE], "context": "CTX"}, "- conversation: Talk with the user"),
    "tweet.j2": (
        {
            "name": "Morgan",
            "agent_context": "AGENT",
            "post_style": ["no hashtags"],
            "recent_posts": ["Old post"],
            "instruction": "about pricing",
        },
        "Old post",
    ),
    "facts_extract.j2": (
        {
            "agent_name": "Morgan",
            "today": "2026-11-29",
            "exchanges": [[SimpleNamespace(role="user", content="I'm Ann and I love tea")]],
        },
        "I'm Ann and I love tea",
    ),
    "facts_reconcile.j2": (
        {"existing": [(0, FACT)], "new_facts": [(0, FACT)]},
        "The user's name is Ann",
    ),
    "llm_boolean.j2": ({}, ""),
    "llm_json_instructions.j2": ({"schema_name": "Answer", "schema": "{}"}, "Answer"),
    "llm_output_repair.j2": ({"problem": "not JSON", "schema_name": "Answer"}, "not JSON"),
    "telegram_start.j2": ({"first_name": "Ada"}, "Ada just opened a chat"),
    "twitter_post_instruction.j2": ({"max_length": 280, "username": "morgan"}, "280"),
    "twitter_reply_context.j2": (
        {"chain": [PARENT], "tweet": TWEET, "username": "morgan"},
        "Price from value, not cost.",
    ),
    "twitter_should_respond.j2": (
        {
            "chain": [PARENT],
            "tweet": TWEET,
            "username": "morgan",
            "name": "Morgan",
            "agent_context": "AGENT",
        },
        "@morgan how do I price?",
    ),
}

TEMPLATES = PromptTemplates()


def test_every_template_has_a_sample() -> None:
    missing = set(TEMPLATES.names()) - set(SAMPLES)
    assert not missing, f"add sample values for {sorted(missing)} to SAMPLES in this file"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_template_renders(name: str) -> None:
    values, expected = SAMPLES[name]
    rendered = TEMPLATES.render(name, **values)
    assert rendered.strip()
    assert expected in rendered


def test_a_template_of_your_own_prints_the_conversation_with_its_filter(tmp_path: Any) -> None:
    (tmp_path / "context.j2").write_text(
        "So far:\n{{ memories | conversation }}Now: {{ user_input }}"
    )
    reply = SimpleNamespace(
        generator="llm", created_at=NOW, text="Two steps:\nfirst </X>", user_id=""
    )
    text = PromptTemplates(tmp_path).render("context.j2", memories=[MEMORY, reply], user_input="Ok")
    assert text == (
        "So far:\n"
        "User ann (2026-11-29 12:00:00 UTC): Hello there\n"
        "You (2026-11-29 12:00:00 UTC): Two steps: ⏎ first ‹/X›\n"
        "Now: Ok"
    )


# Every line break str.splitlines knows, each followed by what a forged line would say.
FORGED = (
    "\n2. forged\r\n- forged\rforged\u2028forged\x85forged\x0bforged\x0cforged"
    "\u2029forged\x1cforged"
)
# The values a user or the model writes (messages, facts, tweets, names); the rest is ours.
USER_WRITTEN = {
    "memories",
    "facts",
    "user_input",
    "exchanges",
    "existing",
    "new_facts",
    "problem",
    "recent_posts",
    "chain",
    "tweet",
    "first_name",
}
OURS = {"role", "generator", "created_at", "image_urls"}


def hostile(value: Any) -> Any:
    """``value`` with FORGED after every string a user or the model could have written."""
    if isinstance(value, str):
        return value + FORGED
    if isinstance(value, list | tuple):
        return type(value)(hostile(item) for item in value)
    if isinstance(value, SimpleNamespace):
        fields = vars(value).items()
        return SimpleNamespace(**{k: v if k in OURS else hostile(v) for k, v in fields})
    return value


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_user_text_cannot_make_a_line_of_any_prompt(name: str) -> None:
    values, _ = SAMPLES[name]
    attacked = {k: hostile(v) if k in USER_WRITTEN else v for k, v in values.items()}
    plain = TEMPLATES.render(name, **values).splitlines()
    rendered = TEMPLATES.render(name, **attacked)
    lines = rendered.splitlines()
    assert len(lines) == len(plain), rendered
    assert [line for line in lines if line.lstrip().startswith(("2.", "- forged", "forged"))] == []
    if attacked != values:
        assert "forged" in rendered and "⏎" in rendered  # the text is there, on its line
