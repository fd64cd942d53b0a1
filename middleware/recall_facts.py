"""Recall what the agent knows about the user: the facts that best match the input."""

from __future__ import annotations

import logging

from liz.errors import LizError, UsageError
from liz.pipeline import AgentRequest, AgentResponse, Middleware
from liz.types import Next

logger = logging.getLogger(__name__)


def recall_facts(limit: int = 10, threshold: float | None = None) -> Middleware:
    """A step that puts the user's best-matching facts on ``req.facts`` (before ``wrap_context``).

    ``threshold`` is the similarity floor (default ``LIZ_FACTS_SEARCH_THRESHOLD``);
    facts matching the input's exact words count whatever their similarity.
    Without a facts store or without input text it passes straight on. When recall
    fails (embeddings down, facts embedded with another model, no pgvector) the
    failure is logged with its fix and the agent answers without facts.
    """
    if limit < 1:
        raise UsageError(f"recall_facts(limit={limit}): limit must be at least 1")

    async def recall(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        facts = req.runtime.facts
        text = (req.input.text or "").strip()
        if facts is not None and text:
            try:
                req.facts = list(
                    await facts.search(
                        text,
                        req.input.agent_id,
                        req.input.user_id,
                        limit=limit,
                        threshold=threshold,
                    )
                )
            except LizError as exc:
                # Facts enrich the reply; without them the agent can still answer.
                logger.warning("no facts recalled for user %s: %s", req.input.user_id, exc.message)
            else:
                logger.debug("recalled %d facts for user %s", len(req.facts), req.input.user_id)
        await next()

    return recall
