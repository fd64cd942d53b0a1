"""After the reply is sent, learn from the exchange, in the background, per burst.

``create_memory`` has queued the job of learning from the user's message in the
message's own transaction; this step adds the exchange to its user's burst, learned
together at the beat after the user has been quiet ``LIZ_LEARN_AFTER_IDLE`` seconds (0:
at once), once ``LIZ_LEARN_BATCH`` have gathered, or when the process stops (see
``liz.learning_queue.bursts``); then as soon as no other turn is under way
(``LIZ_LEARNING_QUIET_SECONDS``, waiting ``LIZ_LEARNING_MAX_DEFER_SECONDS`` at most), so a
burst of turns is not slowed by learning. What it cannot finish the queue keeps: any liz
process sharing the database retries it later (see ``liz.learning_queue``), so nothing is
lost and nothing is learned twice.
"""

from __future__ import annotations

from liz.errors import UsageError
from liz.pipeline import AgentRequest, AgentResponse, Middleware
from liz.types import InputSource, Next


def extract_facts(attempts: int | None = None, wait_seconds: float = 2.0) -> Middleware:
    """A step that, once a reply exists, learns facts from the user's message and it.

    The user never waits for it: it runs on ``runtime.background``. A failure
    (LLM down, unusable answer, database busy) is retried ``attempts`` times
    (default ``LIZ_FACTS_EXTRACT_ATTEMPTS``), waiting ``wait_seconds`` and then
    longer between tries, and logged; the job then stays queued and is retried
    later with backoff (``LIZ_LEARNING_*``). A failure another try cannot fix
    (facts embedded with another model) is logged at once and the job listed as
    failed (``liz facts queue --failed``). Place it after ``create_memory``.
    """
    if attempts is not None and attempts < 1:
        raise UsageError(f"extract_facts(attempts={attempts}): attempts must be at least 1")
    if wait_seconds < 0:
        raise UsageError("extract_facts(wait_seconds=...) cannot be negative")

    async def extract(req: AgentRequest, res: AgentResponse, next: Next) -> None:
        await next()
        facts = req.runtime.facts
        memory_id = req.input_memory_id  # create_memory queued the job under this id
        if res.reply is None or facts is None or memory_id is None:
            return
        if req.dry_run or req.input.source is InputSource.INTERNAL:
            return  # a rehearsal, or the framework talking to itself (scheduled posts)
        if not (req.input.text or "").strip():
            return
        exchange = [
            {"role": "user", "content": req.input.text or ""},
            {"role": "assistant", "content": res.reply.text},
        ]
        req.runtime.background.spawn(
            req.runtime.learning.learn_now(
                memory_id,
                exchange,
                attempts=attempts or facts.settings.extract_attempts,
                wait_seconds=wait_seconds,
                user=(req.input.agent_id, req.input.user_id),
            ),
            name=f"extract_facts:{req.input.agent_id}:{req.input.user_id}",
        )

    return extract
