"""A reply's tool calls as they read in later prompts: one short line per call."""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

# A call's line is cut at this many characters: later prompts need what was done, not
# every byte a tool returned.
MAX_CALL_CHARS = 300


def tool_note(content: dict[str, Any]) -> str:
    """The lines of ``content``'s ``toolCalls`` (and a pending approval), or ''."""
    lines = []
    for call in content.get("toolCalls") or []:
        if not isinstance(call, dict):
            continue
        outcome = call.get("result") if call.get("ok") else {"error": call.get("error")}
        lines.append(
            f"[tool {call.get('name')}({_short(call.get('arguments'))}) -> {_short(outcome)}]"
        )
    pending = content.get("pendingApproval")
    if isinstance(pending, dict):
        lines.append(
            f"[tool {pending.get('tool')}({_short(pending.get('arguments'))}) "
            "waits for the user's approval]"
        )
    return "".join(f"\n{line[:MAX_CALL_CHARS]}" for line in lines)


def _short(value: Any) -> str:
    # Every prompt formats the notes of its last hundred messages again: pydantic's
    # serializer writes them several times faster than json.dumps (and more compactly).
    return value if isinstance(value, str) else to_json(value).decode()
