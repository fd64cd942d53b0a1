"""After the reply is sent, learn from the exchange: facts extracted in the background."""

from __future__ import annotations

import logging

from tenacity import wait_exponential

from liz.errors import LLMError, StorageError, UsageError
from liz.facts.store import FactStore
from liz.pipeline import AgentRequest, AgentResponse
from liz.retry import retrying
from liz.types import Clock, InputSource, Middleware, Next

logger = logging.getLogger(__name__)


def extract_facts(attempts: int | None = None, wait_seconds: float = 2.0) -> Middleware:
    """A step that, once a reply exists, spawns fact extraction for the user's message and it.

    The user never waits for it: it runs on ``runtime.background``. A failure
    (LLM down, unusable answer, database busy) is retried ``attempts`` times
    (default ``LIZ_FACTS_EXTRACT_ATTEMPTS``), waiting ``wait_seconds`` and then
    longer between tries, and finally logged; the request has succeeded anyway.
    A failure another try cannot fix (facts embedded with another model) is
    logged at once.
    """
    if attempts is not None and attempts < 1:
        raise UsageError(f"extract_facts(attempts={attempts}): attempts must be at least 1")
    if wait_seconds < 0:
        raise UsageError("extract_facts(wait_seconds=...) cannot be negative")

    async def extract(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        await next()
        facts = req.runtime.facts
        if res.reply is None or facts is None or not (req.input.text or "").strip():
            return
        if req.dry_run or req.input.source is InputSource.INTERNAL:
            return  # a rehearsal, or the framework talking to itself (scheduled posts)
        exchange = [
            {"role": "user", "content": req.input.text or ""},
            {"role": "assistant", "content": res.reply.text},
        ]
        tries = attempts or facts.settings.extract_attempts
        req.runtime.background.spawn(
            _learn(
                facts,
                exchange,
                req.input.agent_id,
                req.input.user_id,
                req.agent.name,
                req.input_memory_id,
                tries,
                wait_seconds,
                req.runtime.clock,
            ),
            name=f"extract_facts:{req.input.agent_id}:{req.input.user_id}",
        )

    return extract


async def _learn(
    facts: FactStore,
    exchange: list[dict[str, str]],
    agent_id: str,
    user_id: str,
    agent_name: str,
    source_memory_id: str | None,
    attempts: int,
    wait_seconds: float,
    clock: Clock,
) -> None:
    number = 0
    try:
        async for attempt in retrying(
            # The LLM and the database may recover; a model mismatch or bad input will not,
            # and every try pays for an extraction call.
            retry_if=lambda exc: isinstance(exc, LLMError | StorageError),
            attempts=attempts,
            wait=wait_exponential(multiplier=wait_seconds, max=max(wait_seconds * 16, 0.0)),
            clock=clock,
        ):
            with attempt:
                number = attempt.retry_state.attempt_number
                if number > 1:
                    logger.info("extracting facts for user %s: attempt %d", user_id, number)
                events = await facts.add(
                    exchange,
                    agent_id,
                    user_id,
                    source_memory_id=source_memory_id,
                    agent_name=agent_name,
                )
                logger.debug("learned %d fact events for user %s", len(events), user_id)
    except Exception:  # the outermost edge of background work: log once, never raise
        logger.exception(
            "could not extract facts for agent %s, user %s after %d attempts; the reply was "
            "sent and nothing was changed",
            agent_id,
            user_id,
            number,
        )
