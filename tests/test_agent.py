"""Characters load from Liz and Eliza files; agents render their context from templates."""

from __future__ import annotations

import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from liz.agent import BaseAgent
from liz.character import Character
from liz.errors import UsageError
from liz.prompts.templates import PromptTemplates
from liz.routes import conversation, create_new_tweet

DATA = Path(__file__).parent / "data"


def character(**overrides: object) -> Character:
    fields: dict[str, object] = {
        "agentId": "ada",
        "name": "Ada",
        "system": "You are Ada.",
        "bio": [f"bio {i}" for i in range(6)],
        "lore": ["lore 1"],
        "topics": ["chess", "tea"],
        "adjectives": ["kind"],
        "style": {"all": ["brief"], "chat": ["warm"], "post": ["bold"]},
    }
    fields.update(overrides)
    return Character.model_validate(fields)


def test_eliza_character_with_name_dialect_and_string_bio_loads() -> None:
    c = Character.from_json_file(DATA / "eliza_name_dialect.json")
    assert c.agent_id == "trader-tom"
    assert c.bio == ["Trades small caps and writes about it."]
    assert [m.user for m in c.message_examples[0]] == ["Alex", "Trader Tom"]
    assert c.model_extra is not None and c.model_extra["clients"] == ["twitter"]


def test_eliza_character_with_user_dialect_keeps_unknown_fields() -> None:
    c = Character.from_json_file(DATA / "eliza_user_dialect.json")
    assert c.agent_id == "c0ffee00-0000-4000-8000-000000000001"
    assert c.message_examples[0][1].content.text == "Busy."
    assert c.model_extra is not None and c.model_extra["knowledge"] == ["Bees dance."]


def test_a_character_file_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="must hold a JSON object"):
        Character.from_json_file(path)


def test_duplicate_route_names_are_refused() -> None:
    agent = BaseAgent(character())
    agent.add_route(conversation)
    with pytest.raises(UsageError, match="already has a route named 'conversation'"):
        agent.add_route(conversation)
    agent.add_route(create_new_tweet)
    assert [r.name for r in agent.get_routes()] == ["conversation", "create_new_tweet"]


def test_context_has_every_block_and_samples_three_in_the_characters_order() -> None:
    context = BaseAgent(character()).get_agent_context(date(2026, 3, 2))
    for tag in ("SYSTEM_PROMPT", "BIO_CONTEXT", "LORE_CONTEXT", "INTERESTS", "STYLE_GUIDELINES"):
        assert f"<{tag}>" in context and f"</{tag}>" in context
    shown = [i for i in range(6) if f"bio {i}" in context]
    assert len(shown) == 3
    assert [context.index(f"bio {i}") for i in shown] == sorted(
        context.index(f"bio {i}") for i in shown
    )
    assert "You are Ada." in context


def test_the_sampled_character_is_the_same_all_day_in_every_process() -> None:
    """The character is the stable start of every prompt: no draw of its own per turn."""
    day = date(2026, 3, 2)
    first = BaseAgent(character()).get_agent_context(day)
    assert all(BaseAgent(character()).get_agent_context(day) == first for _ in range(20))
    script = (
        "from datetime import date; from liz.agent import BaseAgent; "
        "from tests.test_agent import character; "
        "print(BaseAgent(character()).get_agent_context(date(2026, 3, 2)), end='')"
    )
    other_process = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert other_process.stdout == first
    # Another day, or another agent, draws its own three of the six bio lines.
    days = {BaseAgent(character()).get_agent_context(day.replace(day=d)) for d in range(1, 29)}
    agents = {BaseAgent(character(agentId=f"ada-{n}")).get_agent_context(day) for n in range(20)}
    assert len(days) > 1 and len(agents) > 1


def test_empty_blocks_are_left_out() -> None:
    context = BaseAgent(character(lore=[], topics=[])).get_agent_context()
    assert "<LORE_CONTEXT>" not in context
    assert "<INTERESTS>" not in context


def test_a_users_folder_overrides_a_template(tmp_path: Path) -> None:
    (tmp_path / "agent_context.j2").write_text("I am {{ name }} and nothing else.")
    agent = BaseAgent(character(), templates=PromptTemplates(tmp_path))
    assert agent.get_agent_context() == "I am Ada and nothing else."


def test_liz_character_file_loads_every_field() -> None:
    c = Character.from_json_file(DATA / "liz_character.json")
    assert c.agent_id == "9d6c2a8e-2f43-4d5e-a1f0-3c7b5e8d1a22"
    assert (c.name, c.system) == ("Stern", "You are Stern, a blunt startup mentor.")
    assert c.bio == ["Founded three companies", "Sold two"]
    assert c.message_examples[0][1].content.text == "Not before you have ten paying users."
    assert (c.style.all, c.style.chat, c.style.post) == (["blunt"], ["short"], ["punchy"])
    assert c.topics == ["startups", "fundraising"] and c.adjectives == ["blunt", "honest"]
    assert c.post_examples == ["Ship it, then fix it."]
