"""The ``LIZ_*`` names liz reads; a name it does not read gets one warning naming the closest.

A misspelt setting (``LIZ_SCRIPTD_LLM=true`` in ``.env``) would otherwise be ignored in
silence, and the operator left wondering why it has no effect.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from dotenv import dotenv_values
from pydantic import AliasChoices
from pydantic_settings import BaseSettings

logger = logging.getLogger(__name__)

PREFIX = "LIZ_"
# Old names that have a warning of their own (liz.facts.settings.warn_about_old_names).
OLD_PREFIXES = ("LIZ_MEMORY_",)
_warned: set[str] = set()


def known_names() -> set[str]:
    """Every variable name liz's settings classes read, with their aliases."""
    import liz.config
    import liz.facts.settings
    import liz.learning_queue.settings
    import liz.twitter.settings  # noqa: F401 -- imported so their classes are counted

    names: set[str] = set()
    for cls in _settings_classes(BaseSettings):
        prefix = str(cls.model_config.get("env_prefix", "") or "")
        for field, info in cls.model_fields.items():
            names.add(f"{prefix}{field}".upper())
            for alias in (info.validation_alias, info.alias):
                choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
                names.update(choice.upper() for choice in choices if isinstance(choice, str))
    return names


def unknown_names(
    environ: Mapping[str, str] | None = None, env_file: str | Path = ".env"
) -> dict[str, str | None]:
    """Each ``LIZ_*`` name set in ``environ`` or ``env_file`` that liz does not read, with
    the closest name it does read (or None)."""
    given: dict[str, object] = dict(dotenv_values(env_file)) if Path(env_file).is_file() else {}
    given.update(os.environ if environ is None else environ)
    known = known_names()
    return {
        name: _closest(name.upper(), known)
        for name in sorted(given)
        if name.upper().startswith(PREFIX)
        and name.upper() not in known
        and not name.upper().startswith(OLD_PREFIXES)
    }


def warn_about_unknown_names(env_file: str | Path = ".env") -> None:
    """One warning line per unknown ``LIZ_*`` name, once per process."""
    for name, closest in unknown_names(env_file=env_file).items():
        if name in _warned:
            continue
        _warned.add(name)
        hint = f"; did you mean {closest}?" if closest else "; .env.example lists the settings"
        logger.warning("%s is not a liz setting and is ignored%s", name, hint)


def _closest(name: str, known: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return found[0] if found else None


def _settings_classes(root: type[BaseSettings]) -> list[type[BaseSettings]]:
    found = []
    for cls in root.__subclasses__():
        if cls.__module__.startswith("liz."):
            found.append(cls)
        found.extend(_settings_classes(cls))
    return found
