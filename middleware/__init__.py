"""The standard steps every message runs through, in Liz's order.

Every app runs them unless given a ``chain`` of its own: pick and reorder them, and add
your own anywhere in it.

>>> from liz import App
>>> app = App(chain=[validate_input, load_memories(limit=20), wrap_context, create_memory, router])
"""

from __future__ import annotations

from liz.pipeline import Middleware

from .create_memory import create_memory
from .extract_facts import extract_facts
from .load_memories import load_memories
from .recall_facts import recall_facts
from .router import router
from .validate_input import validate_input
from .wrap_context import wrap_context

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
