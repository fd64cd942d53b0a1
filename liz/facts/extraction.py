"""Extraction: one or more exchanges in, atomic facts about the user out, each credited
to the message it was learned from."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from liz.facts.domain import Exchange
from liz.facts.llm_answers import ExtractedFact, ExtractedFacts
from liz.llm import LLMClient, Size
from liz.prompts.templates import PromptTemplates

logger = logging.getLogger(__name__)

Messages = str | Sequence[Mapping[str, str]]


@dataclass(frozen=True)
class SourcedFact:
    """An extracted fact and the ``Memory`` id of the message it was learned from."""

    fact: ExtractedFact
    source_memory_id: str | None


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
    exchanges: Sequence[Exchange],
    *,
    agent_name: str,
    today: str,
    size: Size,
) -> list[SourcedFact]:
    """Facts worth keeping from ``exchanges`` (oldest first), in one LLM call; empty
    when there are none. Exchanges with nothing said are left out.

    The answer is validated against :class:`ExtractedFacts`; the client shows a
    bad answer back to the model once and then raises ``LLMOutputError``. A fact
    naming no message, or one not listed, is credited to the latest.
    """
    listed = [
        (exchange, conversation)
        for exchange in exchanges
        if (conversation := as_conversation(exchange.messages))
    ]
    if not listed:
        return []
    prompt = templates.render(
        "facts_extract.j2",
        exchanges=[conversation for _, conversation in listed],
        agent_name=agent_name,
        today=today,
    )
    answer = await llm.structured(prompt, ExtractedFacts, size=size)
    found = []
    for fact in answer.facts:
        number = fact.message
        if number is None or not 1 <= number <= len(listed):
            if len(listed) > 1:
                logger.info(
                    "extraction: fact %r names message %s of %d; credited to the latest",
                    fact.text,
                    number,
                    len(listed),
                )
            number = len(listed)
        found.append(SourcedFact(fact, listed[number - 1][0].source_memory_id))
    logger.debug("extracted %d facts from %d messages", len(found), len(listed))
    return found
