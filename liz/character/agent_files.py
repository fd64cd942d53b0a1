"""Load a folder of agents: Python modules that build one, and character files.

``liz serve --agents DIR``, ``liz chat``, ``liz twitter`` and ``liz agents check``
all read the folder here. Every file is tried, so one start lists every bad file.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from liz.agent import BaseAgent
from liz.character import read_character_file
from liz.character.formats import describe_ignored
from liz.errors import UsageError, syntax_error_line
from liz.prompts.templates import PromptTemplates, default_templates
from liz.routes import standard_routes

log = logging.getLogger(__name__)


def _bundled_agents() -> Path:
    """Where liz.agents is installed from: agents/ in an editable install."""
    spec = importlib.util.find_spec("liz.agents")
    assert spec is not None and spec.origin is not None, "liz is installed without liz.agents"
    return Path(spec.origin).parent


DEFAULT_AGENTS_DIR = _bundled_agents()
PYTHON_FORMAT = "python"


@dataclass(frozen=True)
class AgentFile:
    """One agent and the file it came from: its format, and the fields liz does not use."""

    path: Path
    agent: BaseAgent
    format: str
    ignored: tuple[str, ...] = ()


@dataclass
class AgentFolder:
    """What a folder of agents holds: the agents that load, and why the others do not."""

    folder: Path
    loaded: list[AgentFile] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def read_agents_folder(directory: str | Path | None = None) -> AgentFolder:
    """Try every agent file in a folder; each file that cannot be used becomes a problem.

    A ``*.py`` file defines ``create_agent()`` returning a :class:`BaseAgent` (or a
    module-level ``agent``); a ``*.json`` file is a character in Liz's format or one
    of Eliza's and gets the standard routes. Files starting with ``_`` are skipped.
    """
    folder = Path(directory) if directory is not None else DEFAULT_AGENTS_DIR
    if not folder.is_dir():
        raise UsageError(
            f"agents folder {str(folder)!r} does not exist; name an existing folder "
            "(liz serve --agents DIR, liz agents check DIR)"
        )
    result = AgentFolder(folder)
    ids: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith("_") or path.suffix not in (".py", ".json"):
            continue
        try:
            loaded = (
                _agent_from_module(path) if path.suffix == ".py" else _agent_from_character(path)
            )
        except UsageError as exc:
            result.problems.append(exc.message)
            continue
        agent_id = loaded.agent.agent_id
        if agent_id in ids:
            result.problems.append(
                f"{path}: a second agent with id {agent_id!r} (the first is in "
                f"{ids[agent_id].name}); ids must differ"
            )
            continue
        ids[agent_id] = path
        result.loaded.append(loaded)
    return result


def load_agents(
    directory: str | Path | None = None, *, prompts_dir: str | Path | None = None
) -> dict[str, BaseAgent]:
    """Load every agent in a folder, by agent id; one :class:`UsageError` lists every bad file.

    Fields of a character file that liz does not use are logged once per file. With
    ``prompts_dir`` (``LIZ_PROMPTS_DIR``), agents on the built-in templates use that
    folder's templates first.
    """
    found = read_agents_folder(directory)
    if found.problems:
        count = len(found.problems)
        listing = "\n".join(f"  {problem}" for problem in found.problems)
        raise UsageError(
            f"{count} agent file{'s' if count > 1 else ''} in {str(found.folder)!r} "
            f"cannot be used (check them with `liz agents check`):\n{listing}"
        )
    if not found.loaded:
        raise UsageError(f"no agents in {str(found.folder)!r}: add a *.py or *.json agent there")
    for item in found.loaded:
        if item.ignored:
            log.warning(
                "%s: liz does not use the fields %s", item.path, describe_ignored(item.ignored)
            )
    agents = {item.agent.agent_id: item.agent for item in found.loaded}
    apply_prompts_dir(agents.values(), prompts_dir)
    return agents


def apply_prompts_dir(agents: Iterable[BaseAgent], prompts_dir: str | Path | None) -> None:
    """Agents on the built-in templates use ``LIZ_PROMPTS_DIR``'s templates first."""
    if prompts_dir is None:
        return
    if not Path(prompts_dir).is_dir():
        raise UsageError(f"LIZ_PROMPTS_DIR {str(prompts_dir)!r} is not a folder")
    overridden = PromptTemplates(prompts_dir)
    for agent in agents:
        if agent.templates is default_templates:
            agent.templates = overridden


def _agent_from_module(path: Path) -> AgentFile:
    module_name = f"liz_user_agents.{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
        factory = getattr(module, "create_agent", None)
        agent = factory() if callable(factory) else getattr(module, "agent", None)
    except UsageError as exc:
        raise UsageError(f"{path}: {exc.message}") from exc
    except SyntaxError as exc:
        raise UsageError(syntax_error_line(exc)) from None
    except Exception as exc:
        raise UsageError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(agent, BaseAgent):
        raise UsageError(f"{path}: define create_agent() returning a BaseAgent, or `agent`")
    return AgentFile(path, agent, PYTHON_FORMAT)


def _agent_from_character(path: Path) -> AgentFile:
    character_file = read_character_file(path)  # a CharacterFileError names what is missing
    agent = BaseAgent(character_file.character)
    for route in standard_routes():
        agent.add_route(route)
    return AgentFile(path, agent, character_file.format, character_file.ignored)
