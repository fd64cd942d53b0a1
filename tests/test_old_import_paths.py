"""The import paths and entry points the docs show users keep working after modules moved."""

from __future__ import annotations

import importlib

import pytest

import liz.prompts.templates


@pytest.mark.parametrize(
    "path",
    [
        "liz.asgi:app_from_env",
        "liz.middleware:standard_middleware",
        "liz.agents.business_advisor:create_agent",
        "liz.testing.openai_server:ScriptedOpenAI",
        "liz.testing.clock:ManualClock",
        "liz.config:Settings",
        "liz.routes:standard_routes",
        "liz.pipeline:AgentRequest",
        "liz.types:InputObject",
        "liz.agent:BaseAgent",
        "liz.character:Character",
        "liz.errors:UsageError",
        "liz.tools.turn:answer_with_tools",
    ],
)
def test_a_documented_path_imports(path: str) -> None:
    module, name = path.split(":")
    assert hasattr(importlib.import_module(module), name), f"{path} is gone"


def test_the_old_templates_path_hands_on_the_same_functions() -> None:
    old = importlib.import_module("liz.templates")
    assert old.trusted is liz.prompts.templates.trusted
    assert old.default_templates is liz.prompts.templates.default_templates
