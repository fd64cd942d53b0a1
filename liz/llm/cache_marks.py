"""The mark Anthropic's prompt cache needs: a breakpoint at the end of the stable part.

OpenAI caches the start of every prompt by itself. Anthropic's models cache a prompt
only up to a ``cache_control`` breakpoint the request marks, through OpenRouter too,
which passes it on. liz's prompts open with what is the same for every turn of every
user: the tools, the system message, and the character, which ends with
``</AGENT_CONTEXT>`` (liz/prompts/context.j2). For those models the user message that
holds that tag is sent as two text parts, split right after it, and the first is marked.
Users cannot forge the tag: a template prints theirs as ``‹/AGENT_CONTEXT›``.
"""

from __future__ import annotations

from typing import Any

STABLE_END = "</AGENT_CONTEXT>"
BREAKPOINT = {"type": "ephemeral"}


def marks_cache(base_url: str, model: str) -> bool:
    """Whether requests for ``model`` at ``base_url`` mark the breakpoint: Anthropic's
    models through OpenRouter."""
    return "openrouter.ai" in base_url and model.startswith("anthropic/")


def with_cache_mark(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with the end of the stable part marked (a copy; unchanged without it)."""
    for index, message in enumerate(messages):
        if message.get("role") != "user":
            continue
        parts = _parts(message.get("content"))
        for at, part in enumerate(parts):
            text = part.get("text") if part.get("type") == "text" else None
            if not isinstance(text, str) or STABLE_END not in text:
                continue
            end = text.index(STABLE_END) + len(STABLE_END)
            split = [{"type": "text", "text": text[:end], "cache_control": BREAKPOINT}]
            if text[end:]:
                split.append({"type": "text", "text": text[end:]})
            marked = {**message, "content": [*parts[:at], *split, *parts[at + 1 :]]}
            return [*messages[:index], marked, *messages[index + 1 :]]
    return messages


def _parts(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [part for part in content if isinstance(part, dict)]
    return []
