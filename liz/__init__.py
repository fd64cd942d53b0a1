"""liz: Express-style AI agents with a memory you can trust."""

from __future__ import annotations

from liz.agent import BaseAgent
from liz.character import Character
from liz.config import Settings
from liz.errors import LizError, LLMError, LLMNotConfigured, StorageError, UsageError
from liz.pipeline import AgentFramework, AgentRequest, AgentResponse, compose
from liz.types import (
    AgentReply,
    InputObject,
    InputSource,
    InputType,
    Memory,
    Middleware,
    Next,
    Route,
)

__all__ = [
    "AgentFramework",
    "AgentReply",
    "AgentRequest",
    "AgentResponse",
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
