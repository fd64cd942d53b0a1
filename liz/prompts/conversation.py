"""How the recent conversation reads in a prompt: one line per message, oldest first.

    User ada (2026-01-02 03:04:05 UTC): Hi
    You (2026-01-02 03:04:09 UTC): Hello, Ada.

A message's line breaks are shown as ``⏎`` (:func:`liz.prompts.text.one_line`), so every
line is a speaker's and no message can forge a line the agent said. What a user wrote is
neutralised as every value a template prints is (:func:`liz.prompts.text.neutralize`).

The same lines feed the token budget (load_memories) and the prompt (context.j2's
``conversation`` filter). A line depends only on its message, and the same 100 messages
come back turn after turn, so lines are kept in a small cache instead of being
formatted again each time.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from functools import lru_cache

from liz.prompts.text import PromptText, neutralize, one_line
from liz.tools.memory_lines import tool_note
from liz.types import Memory

# Lines kept: the last 100 messages of about a hundred busy conversations.
CACHED_LINES = 10_000


def conversation(memories: Iterable[Memory]) -> PromptText:
    """The lines of ``memories`` (in the order given), each ending in a newline."""
    return PromptText("".join(map(line, memories)))


def line(memory: Memory) -> str:
    """``memory`` as its conversation line, with its newline."""
    # The reply's tool calls, if any (a duck-typed memory without content has none).
    text = memory.text + tool_note(getattr(memory, "content", None) or {})
    return _line(memory.generator, memory.user_id, memory.created_at, text)


@lru_cache(maxsize=CACHED_LINES)
def _line(generator: str, user_id: str, created_at: datetime, text: str) -> str:
    speaker = "You" if generator == "llm" else f"User {one_line(neutralize(user_id))}"
    at = created_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{speaker} ({at}): {one_line(neutralize(text))}\n"
