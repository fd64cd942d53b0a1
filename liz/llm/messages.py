"""Chat messages as the OpenAI chat API takes them, built from what callers pass."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypedDict

from liz.errors import UsageError

Role = Literal["system", "user", "assistant"]
ROLES: tuple[str, ...] = ("system", "user", "assistant")


class ChatMessage(TypedDict):
    """One message of a conversation: ``{"role": "user", "content": "hello"}``."""

    role: Role
    content: str


Prompt = str | Sequence[ChatMessage]
"""A single user message as text, or a whole conversation."""


def build_messages(
    prompt: Prompt, *, system: str | None = None, image_urls: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The ``messages`` list for a chat completion.

    ``system`` goes first; ``image_urls`` are attached to the last user message as
    ``image_url`` content parts, after its text.
    """
    if isinstance(prompt, str):
        conversation: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    else:
        conversation = [_checked(message, index) for index, message in enumerate(prompt)]
    if not conversation:
        raise UsageError("no messages to send: pass a prompt string or a non-empty message list")
    if system is not None:
        conversation.insert(0, {"role": "system", "content": system})
    if image_urls:
        _attach_images(conversation, image_urls)
    return conversation


def _checked(message: object, index: int) -> dict[str, Any]:
    if not isinstance(message, dict):
        raise UsageError(
            f"message {index} is a {type(message).__name__}; "
            'pass dicts like {"role": "user", "content": "..."}'
        )
    role = message.get("role")
    content = message.get("content")
    if role not in ROLES:
        raise UsageError(f"message {index} has role {role!r}; use one of {', '.join(ROLES)}")
    if not isinstance(content, str):
        raise UsageError(f"message {index} has no text content; set its 'content' to a string")
    return {"role": role, "content": content}


def _attach_images(conversation: list[dict[str, Any]], image_urls: Sequence[str]) -> None:
    for url in image_urls:
        if not isinstance(url, str) or not url.strip():
            raise UsageError(f"image URL {url!r} is empty; pass http(s) or data: URLs")
    for message in reversed(conversation):
        if message["role"] == "user":
            parts: list[dict[str, Any]] = [{"type": "text", "text": message["content"]}]
            parts.extend({"type": "image_url", "image_url": {"url": url}} for url in image_urls)
            message["content"] = parts
            return
    raise UsageError("images need a user message to go with; add one to the conversation")
