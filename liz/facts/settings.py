"""Settings of the facts store, from ``LIZ_FACTS_*`` environment variables or ``.env``."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Literal

from dotenv import dotenv_values
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

logger = logging.getLogger(__name__)
OLD_PREFIX = "LIZ_MEMORY_"


class FactSettings(BaseSettings):
    """How facts are extracted, reconciled and recalled."""

    model_config = SettingsConfigDict(
        env_prefix="LIZ_FACTS_", env_file=".env", extra="ignore", env_ignore_empty=True
    )

    # Keep facts about users at all (needs pgvector on PostgreSQL; SQLite always can).
    enabled: bool = True
    # Which chat model extracts and reconciles facts: the small one is usually enough.
    model_size: Literal["small", "large"] = "small"
    # Similarity at or above which a stored fact is shown to the reconcile call;
    # with none that similar, new facts are added without asking the LLM.
    reconcile_threshold: float = Field(default=0.4, ge=-1.0, le=1.0)
    # Stored facts shown to the reconcile call per new fact.
    reconcile_candidates: int = Field(default=5, ge=1, le=50)
    # Default result count and similarity floor for search (keyword hits pass the floor).
    search_limit: int = Field(default=10, ge=1, le=1000)
    search_threshold: float = Field(default=0.3, ge=-1.0, le=1.0)
    # Scopes whose vectors the SQLite search keeps in memory.
    cache_scopes: int = Field(default=64, ge=1)
    # Attempts of the background extraction after a reply (middleware extract_facts).
    extract_attempts: int = Field(default=3, ge=1, le=10)


def warn_about_old_names(env_file: str | Path = ".env") -> list[str]:
    """Name each ``LIZ_MEMORY_*`` setting still in use: they were renamed ``LIZ_FACTS_*``."""
    found = dict(dotenv_values(env_file)) if Path(env_file).is_file() else {}
    found.update(os.environ)
    old = sorted(name for name in found if name.upper().startswith(OLD_PREFIX))
    for name in old:
        logger.warning(
            "%s is no longer read: the facts settings are named LIZ_FACTS_*; rename it %s",
            name,
            "LIZ_FACTS_" + name[len(OLD_PREFIX) :],
        )
    return old
