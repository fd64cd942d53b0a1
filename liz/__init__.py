"""liz: Express-style AI agents with a memory you can trust.

>>> from liz import App, BaseAgent, Character

Names are imported on first use, so ``liz --help`` starts fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from liz.agent import BaseAgent
    from liz.app import App
    from liz.character import Character
    from liz.config import Settings
    from liz.errors import LizError, LLMError, LLMNotConfigured, StorageError, UsageError
    from liz.pipeline import (
        AgentFramework,
        AgentRequest,
        AgentResponse,
        Middleware,
        Route,
        compose,
    )
    from liz.types import AgentReply, InputObject, InputSource, InputType, Memory, Next

_WHERE = {
    "App": "liz.app",
    "AgentFramework": "liz.pipeline",
    "AgentReply": "liz.types",
    "AgentRequest": "liz.pipeline",
    "AgentResponse": "liz.pipeline",
    "BaseAgent": "liz.agent",
    "Character": "liz.character",
    "InputObject": "liz.types",
    "InputSource": "liz.types",
    "InputType": "liz.types",
    "LLMError": "liz.errors",
    "LLMNotConfigured": "liz.errors",
    "LizError": "liz.errors",
    "Memory": "liz.types",
    "Middleware": "liz.pipeline",
    "Next": "liz.types",
    "Route": "liz.pipeline",
    "Settings": "liz.config",
    "StorageError": "liz.errors",
    "UsageError": "liz.errors",
    "compose": "liz.pipeline",
}

__all__ = [
    "AgentFramework",
    "AgentReply",
    "AgentRequest",
    "AgentResponse",
    "App",
    "BaseAgent",
    "Character",
    "InputObject",
    "InputSource",
    "InputType",
    "LLMError",
    "LLMNotConfigured",
    "LizError",
    "Memory",
    "Middleware",
    "Next",
    "Route",
    "Settings",
    "StorageError",
    "UsageError",
    "compose",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'liz' has no attribute {name!r}")
