"""Characters written by others load and speak as themselves, in every format liz reads.

Each file in tests/data/characters/ is one format. A message to each agent goes
through the standard chain to the scripted LLM, and the test reads what the LLM
was sent: the character's own words, with Eliza's placeholders filled.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.agent import BaseAgent
from liz.character.agent_files import load_agents, read_agents_folder
from liz.config import Settings
from liz.db.engine import create_engine
from liz.errors import UsageError
from liz.llm import LLMClient
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.testing.openai_server import ScriptedOpenAI
from liz.types import InputObject

pytestmark = pytest.mark.anyio

CHARACTERS = Path(__file__).parent / "data" / "characters"
BAD = CHARACTERS / "bad"


@dataclass(frozen=True)
class Expected:
    file: str
    format: str
    agent_id: str
    system: tuple[str, ...]  # phrases of the system prompt the LLM receives
    context: tuple[str, ...]  # phrases of the agent's context in the prompt
    ignored: tuple[str, ...]


EXPECTED = [
    Expected(
        "elizaos_current.json",
        "elizaos",
        "juniper",
        system=(
            "You are Juniper.",
            "Keeps the lighthouse on Gull Rock",
            "Juniper has not missed a dusk lamp-lighting",
            "patient, dry-humoured",
            "short sentences",
        ),
        context=(
            "Alex: Is it lonely out there, Juniper?",
            "Juniper: Not with forty terns arguing under the window.",
            "Sam: When is high tide?",
            "Fog at dawn. Horn sounded 212 times.",
        ),
        ignored=("username", "plugins", "settings", "knowledge", "templates"),
    ),
    Expected(
        "eliza_v1.json",
        "eliza-v1",
        "otto-brenner",
        system=("You are Otto Brenner, a retired watchmaker",),
        context=(
            "Repaired clocks in a workshop above a bakery",
            "Alex: My watch runs five minutes fast.",
            "Otto Brenner: Then the hairspring is too short, Alex.",
        ),
        ignored=("plugins", "settings"),
    ),
    Expected(
        "eliza_v0.json",
        "eliza-v0",
        "marisol",
        system=("You are Marisol.", "Grows tomatoes on a city rooftop", "earthy, generous"),
        context=(
            "Named her compost heap after Alex's favourite aunt.",
            "Alex: My basil keeps wilting.",
            "Sam: Does that work for mint too?",
            "Marisol: Mint would grow on the moon.",
        ),
        ignored=("clients", "modelProvider", "settings", "knowledge", "people"),
    ),
    Expected(
        "characterfile.json",
        "characterfile",
        "tobias",
        system=("You are Tobias.", "restores old bicycles", "gruff, kind", "plain words"),
        context=(
            "Rode from Lyon to Turin",
            "Alex: My chain keeps slipping.",
            "Tobias: Your cassette is worn, Alex.",
        ),
        ignored=(),
    ),
    Expected(
        "liz.json",
        "liz",
        "quill",
        system=("You are Quill, an editor who makes writing shorter",),
        context=(
            "Edited a small-town newspaper",
            "Alex: Can you make my intro punchier?",
            "Quill: Send it.",
        ),
        ignored=(),
    ),
    Expected(
        "liz_profile.json",
        "liz-profile",
        "hearth",
        system=(
            "You are Hearth.",
            "A home cook who helps people plan meals",
            "expertise: home cooking, leftovers, meal planning",
            "resourceful, cheerful, thrifty",
            "tone: warm",
        ),
        context=("interests: market days, fermenting vegetables",),
        ignored=("metadata",),
    ),
]


@pytest.fixture
async def sqlite_runtime(
    _sqlite_template: Path, tmp_path: Path, llm: LLMClient
) -> AsyncIterator[Runtime]:
    """A runtime on a migrated SQLite file and the scripted LLM (characters need no Postgres)."""
    path = tmp_path / "liz.db"
    shutil.copyfile(_sqlite_template, path)
    url = f"sqlite+aiosqlite:///{path}"
    engine: AsyncEngine = create_engine(url)
    settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
    runtime = Runtime(settings=settings, engine=engine, llm_client=llm)
    yield runtime
    await runtime.background.drain()
    await engine.dispose()


def test_every_format_in_the_folder_loads_with_its_format_and_ignored_fields() -> None:
    found = read_agents_folder(CHARACTERS)
    assert found.problems == []
    seen = {
        item.path.name: (item.format, item.agent.agent_id, item.ignored) for item in found.loaded
    }
    assert seen == {e.file: (e.format, e.agent_id, e.ignored) for e in EXPECTED}


@pytest.mark.parametrize("expected", EXPECTED, ids=[e.format for e in EXPECTED])
async def test_the_llm_hears_the_character_in_its_own_words(
    expected: Expected, sqlite_runtime: Runtime, scripted: ScriptedOpenAI
) -> None:
    agent = load_agents(CHARACTERS)[expected.agent_id]
    scripted.reply("Hello from the character.")
    framework = build_framework(sqlite_runtime)
    message = InputObject(user_id="reader", agent_id=agent.agent_id, text="Who are you?")

    res = await framework.process(message, agent)

    assert res.error is None and res.reply is not None
    assert res.reply.text == "Hello from the character."
    [request] = scripted.chat_requests
    system = request.messages[0]
    assert system["role"] == "system"
    for phrase in expected.system:
        assert phrase in system["content"]
    for phrase in expected.system + expected.context:
        assert phrase in request.prompt
    assert "Who are you?" in request.prompt
    assert "{{" not in request.prompt


async def test_the_bundled_agent_fills_its_example_users_too(
    agent: BaseAgent, sqlite_runtime: Runtime, scripted: ScriptedOpenAI
) -> None:
    scripted.reply("Start with your margins.")
    message = InputObject(user_id="reader", agent_id=agent.agent_id, text="Where do I start?")
    res = await build_framework(sqlite_runtime).process(message, agent)
    assert res.reply is not None
    prompt = scripted.chat_requests[0].prompt
    assert "Alex: Should I raise my prices?" in prompt
    assert "{{" not in prompt


def test_every_bad_file_is_named_in_one_error_with_what_is_missing(tmp_path: Path) -> None:
    for path in BAD.iterdir():
        shutil.copy(path, tmp_path / path.name)
    shutil.copy(CHARACTERS / "liz.json", tmp_path / "liz.json")

    with pytest.raises(UsageError) as raised:
        load_agents(tmp_path)

    message = raised.value.message
    assert message.startswith(f"4 agent files in {str(tmp_path)!r} cannot be used")
    assert "no_name.json: not a valid character file: `name` is missing" in message
    assert "only_a_name.json: not a valid character file: nothing says who" in message
    assert "broken_examples.json: not a valid character file: messageExamples[1]" in message
    assert "`messageExamples[0][0].content`: Field required" in message
    assert "truncated.json: not valid JSON" in message
    assert "liz.json" not in message


def test_ignored_fields_are_logged_once_per_file(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="liz.character.agent_files"):
        load_agents(CHARACTERS)
    lines = [record.getMessage() for record in caplog.records]
    assert sorted(lines) == sorted(
        f"{CHARACTERS / e.file}: liz does not use the fields {', '.join(e.ignored)}"
        for e in EXPECTED
        if e.ignored
    )


def test_a_character_with_a_system_prompt_keeps_it_as_written() -> None:
    agents = load_agents(CHARACTERS)
    assert agents["quill"].get_system_prompt() == (
        "You are Quill, an editor who makes writing shorter and clearer without changing what "
        "it says."
    )
    assert not agents["quill"].character.system_was_composed
    assert agents["juniper"].character.system_was_composed
