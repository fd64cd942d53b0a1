"""The learning backlog, and the jobs set aside, as ``GET /health`` reports them."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.db.errors import storage_error_for
from liz.db.health import outage_log
from liz.learning_queue.jobs import backlog, list_jobs
from liz.learning_queue.tables import FAILED

if TYPE_CHECKING:
    from liz.runtime.services import Runtime

logger = logging.getLogger(__name__)


async def learning_backlog(
    runtime: Runtime, scope: tuple[str, str] | None = None
) -> dict[str, Any]:
    """``{"pending", "failed", "oldestPendingSeconds", "learnAfterIdleSeconds"}``, of every
    user or of one (agent id, user id): how long the oldest waiting message has waited,
    beside how long a conversation must be quiet before it is learned. Never raises."""
    try:
        async with runtime.reads() as session:  # never waits for the writer
            found = await backlog(session, scope)
    except Exception as exc:  # the health check reports, it never fails itself
        storage = storage_error_for(exc)
        if storage is None:
            logger.warning("health check: cannot read the learning queue: %s", exc)
        else:  # an outage is logged as one, not once per /health call
            outage_log(runtime.engine).failed(exc, f"health check: {storage.message}")
        return {"status": f"unknown: {type(exc).__name__}"}
    age = found.oldest_age_seconds(runtime.clock.now())
    return {
        "pending": found.pending,
        "failed": found.failed,
        "oldestPendingSeconds": round(age, 1) if age is not None else None,
        "learnAfterIdleSeconds": runtime.settings.learning.learn_after_idle,
    }


async def set_aside(
    sessions: async_sessionmaker[AsyncSession], *, limit: int = 10
) -> list[dict[str, Any]]:
    """The jobs set aside (failed for good), oldest first, with their reasons, for
    ``/health``: ``[{"id", "agentId", "userId", "memoryId", "attempts", "reason"}]``."""
    async with sessions() as session:
        failed = await list_jobs(session, status=FAILED, limit=limit)
    return [
        {
            "id": job.id,
            "agentId": job.agent_id,
            "userId": job.user_id,
            "memoryId": job.memory_id,
            "attempts": job.attempts,
            "reason": job.last_error,
        }
        for job in failed
    ]
