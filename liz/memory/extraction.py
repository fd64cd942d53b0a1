"""Extraction: the latest exchange in, atomic facts about the user out."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from liz.llm import LLMClient, Size
from liz.memory.schemas import ExtractedFact, ExtractedFacts
from liz.templates import PromptTemplates

logger = logging.getLogger(__name__)


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
