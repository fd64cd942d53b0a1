"""Loading a user's folder of agents, as `liz serve --agents DIR` does."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from liz.errors import UsageError
from liz.runtime.bootstrap import load_agents

DATA = Path(__file__).parent / "data"

PY_AGENT = """
from liz import BaseAgent, Character
from liz.routes import conversation


def create_agent():
    agent = BaseAgent(Character(agent_id="chef", name="Remy", system="You cook."))
    agent.add_route(conversation)
    return agent
"""


def test_the_bundled_folder_holds_the_business_advisor() -> None:
    agents = load_agents()
    assert list(agents) == ["business-advisor"]
    assert [r.name for r in agents["business-advisor"].get_routes()] == [
        "conversation",
        "create_new_tweet",
    ]


def test_a_folder_of_python_and_json_agents_loads(tmp_path: Path) -> None:
    (tmp_path / "chef.py").write_text(PY_AGENT)
    shutil.copy(DATA / "eliza_name_dialect.json", tmp_path / "tom.json")
    (tmp_path / "_private.py").write_text("raise SystemExit('never imported')")
    (tmp_path / "notes.txt").write_text("ignored")
    agents = load_agents(tmp_path)
    assert sorted(agents) == ["chef", "trader-tom"]
    assert [r.name for r in agents["trader-tom"].get_routes()] == [
        "conversation",
        "create_new_tweet",
    ]


def test_two_agents_with_one_id_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(PY_AGENT)
    (tmp_path / "b.py").write_text(PY_AGENT)
    with pytest.raises(UsageError, match="a second agent with id 'chef'"):
        load_agents(tmp_path)


def test_a_module_without_an_agent_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text("x = 1\n")
    with pytest.raises(UsageError, match="define create_agent"):
        load_agents(tmp_path)


def test_a_missing_or_empty_folder_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_agents(tmp_path / "nope")
    with pytest.raises(UsageError, match="no agents in"):
        load_agents(tmp_path)


def test_a_broken_character_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"name": "X", "bio": 5}')
    with pytest.raises(UsageError, match=r"bad\.json: not a valid character file"):
        load_agents(tmp_path)


def test_prompts_dir_overrides_the_agents_templates(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "agent_context.j2").write_text("Only {{ name }}.")
    agents = load_agents(prompts_dir=prompts)
    assert agents["business-advisor"].get_agent_context() == "Only Morgan."
