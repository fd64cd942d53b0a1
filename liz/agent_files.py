"""Load a folder of agents: Python modules that build one, and character files.

``liz serve --agents DIR``, ``liz chat``, ``liz twitter`` and ``liz agents check``
all read the folder here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from liz.agent import BaseAgent
from liz.character import Character
from liz.errors import UsageError
from liz.routes import standard_routes
from liz.templates import PromptTemplates, default_templates

DEFAULT_AGENTS_DIR = Path(__file__).resolve().parent.parent / "agents"


def load_agents(
    directory: str | Path | None = None, *, prompts_dir: str | Path | None = None
) -> dict[str, BaseAgent]:
    """Load every agent in a folder, by agent id.

    A ``*.py`` file defines ``create_agent()`` returning a :class:`BaseAgent`
    (or a module-level ``agent``); a ``*.json`` file is a Liz or Eliza character
    and gets the standard routes. Files starting with ``_`` are skipped. With
    ``prompts_dir`` (``LIZ_PROMPTS_DIR``), agents on the built-in templates use
    that folder's templates first.
    """
    folder = Path(directory) if directory is not None else DEFAULT_AGENTS_DIR
    if not folder.is_dir():
        raise UsageError(f"agents folder {str(folder)!r} does not exist; pass --agents DIR")
    agents: dict[str, BaseAgent] = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith("_"):
            continue
        if path.suffix == ".py":
            agent = _agent_from_module(path)
        elif path.suffix == ".json":
            agent = _agent_from_character(path)
        else:
            continue
        if agent.agent_id in agents:
            raise UsageError(f"{path}: a second agent with id {agent.agent_id!r}; ids must differ")
        agents[agent.agent_id] = agent
    if not agents:
        raise UsageError(f"no agents in {str(folder)!r}: add a *.py or *.json agent there")
    if prompts_dir is not None:
        if not Path(prompts_dir).is_dir():
            raise UsageError(f"LIZ_PROMPTS_DIR {str(prompts_dir)!r} is not a folder")
        overridden = PromptTemplates(prompts_dir)
        for agent in agents.values():
            if agent.templates is default_templates:
                agent.templates = overridden
    return agents


def _agent_from_module(path: Path) -> BaseAgent:
    module_name = f"liz_user_agents.{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    factory = getattr(module, "create_agent", None)
    agent = factory() if callable(factory) else getattr(module, "agent", None)
    if not isinstance(agent, BaseAgent):
        raise UsageError(f"{path}: define create_agent() returning a BaseAgent, or `agent`")
    return agent


def _agent_from_character(path: Path) -> BaseAgent:
    try:
        character = Character.from_json_file(path)
    except ValueError as exc:
        raise UsageError(f"{path}: not a valid character file: {exc}") from exc
    agent = BaseAgent(character)
    for route in standard_routes():
        agent.add_route(route)
    return agent
