"""The standard steps every message runs through, in Liz's order.

>>> framework.use(*standard_middleware)

Or pick and reorder them, and add your own anywhere in the chain.
"""

from __future__ import annotations

from liz.types import Middleware
from middleware.create_memory import create_memory
from middleware.extract_facts import extract_facts
from middleware.load_memories import load_memories
from middleware.recall_facts import recall_facts
from middleware.router import router
from middleware.validate_input import validate_input
from middleware.wrap_context import wrap_context

standard_middleware: list[Middleware] = [
    validate_input,
    load_memories(limit=100),
    recall_facts(),
    wrap_context,
    create_memory,
    extract_facts(),
    router,
]

__all__ = [
    "create_memory",
    "extract_facts",
    "load_memories",
    "recall_facts",
    "router",
    "standard_middleware",
    "validate_input",
    "wrap_context",
]
