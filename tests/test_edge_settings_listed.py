"""Every setting liz reads is in .env.example, where an operator looks for it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import AliasChoices
from pydantic_settings import BaseSettings

import liz.config
import liz.discord.settings
import liz.facts.settings
import liz.learning_queue.settings
import liz.telegram.settings
import liz.twitter.settings

ENV_EXAMPLE = Path(__file__).parent.parent / ".env.example"
MODULES = [
    liz.config,
    liz.facts.settings,
    liz.learning_queue.settings,
    liz.twitter.settings,
    liz.telegram.settings,
    liz.discord.settings,
]


def variables(settings: type[BaseSettings]) -> list[str]:
    prefix = settings.model_config.get("env_prefix", "") or ""
    names = []
    for field, info in settings.model_fields.items():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseSettings):
            continue  # a branch of the settings tree (Settings.facts): its own fields count
        alias = info.validation_alias or info.alias
        if isinstance(alias, AliasChoices):  # the first choice is the name to write
            alias = alias.choices[0]
        names.append(alias.upper() if isinstance(alias, str) else (prefix + field).upper())
    return names


SETTINGS = sorted(
    {
        name
        for module in MODULES
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, BaseSettings) and value is not BaseSettings
        for name in variables(value)
    }
)


@pytest.mark.parametrize("name", SETTINGS)
def test_the_setting_is_in_env_example(name: str) -> None:
    listed = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", ENV_EXAMPLE.read_text(), re.MULTILINE))
    assert name in listed, f"add {name} to .env.example with a line saying what it does"


def test_the_new_edge_settings_are_read_from_env_example_as_written() -> None:
    settings = liz.config.Settings(_env_file=ENV_EXAMPLE)  # type: ignore[call-arg]
    assert settings.liz_allowed_hosts == [] and settings.liz_cors_origins == []
    assert not settings.liz_allow_open and not settings.liz_traces_for_users


def test_env_example_names_each_setting_once() -> None:
    """A second line for the same name silently overrides the first one an operator edits."""
    # A setting's line, or one commented out; "#   NAME=..." lines are examples of a value.
    named = re.findall(r"^(?:# ?)?([A-Z][A-Z0-9_]+)=", ENV_EXAMPLE.read_text(), re.MULTILINE)
    twice = sorted({name for name in named if named.count(name) > 1})
    assert not twice, f"named more than once in .env.example: {', '.join(twice)}"


@pytest.mark.parametrize("name", SETTINGS)
def test_a_bad_value_of_any_setting_is_one_line_naming_it(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What a command prints for it (liz.cli.failing.reported): one line, never a traceback."""
    from liz.config.loading import load_settings
    from liz.errors import UsageError

    monkeypatch.chdir(tmp_path)  # no .env of the checkout's
    monkeypatch.setenv(name, "?bad?")
    classes = [
        value
        for module in MODULES
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, BaseSettings)
        and value is not BaseSettings
        and name in variables(value)
    ]
    for settings in classes:
        try:
            load_settings(settings)
        except UsageError as exc:
            assert len(exc.message.splitlines()) == 1 and name in exc.message, exc.message
