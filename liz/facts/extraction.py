"""Extraction: the latest exchange in, atomic facts about the user out."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from liz.facts.llm_answers import ExtractedFact, ExtractedFacts
from liz.llm import LLMClient, Size
from liz.templates import PromptTemplates

logger = logging.getLogger(__name__)

Messages = str | Sequence[Mapping[str, str]]


def as_conversation(messages: Messages) -> list[dict[str, str]]:
    """``messages`` as ``{"role", "content"}`` dicts, empty ones dropped; a text is the
    user's."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}] if messages.strip() else []
    said = []
    for message in messages:
        content = str(message.get("content", "")).strip()
        if content:
            said.append({"role": str(message.get("role", "user")), "content": content})
    return said


async def extract_facts(
    llm: LLMClient,
    templates: PromptTemplates,
    conversation: Sequence[dict[str, str]],
    *,
    agent_name: str,
    today: str,
    size: Size,
) -> list[ExtractedFact]:
    """Facts worth keeping from ``conversation``; empty when there are none.

    The answer is validated against :class:`ExtractedFacts`; the client shows a
    bad answer back to the model once and then raises ``LLMOutputError``.
    """
    prompt = templates.render(
        "facts_extract.j2", messages=conversation, agent_name=agent_name, today=today
    )
    answer = await llm.structured(prompt, ExtractedFacts, size=size)
    logger.debug("extracted %d facts", len(answer.facts))
    return answer.facts
