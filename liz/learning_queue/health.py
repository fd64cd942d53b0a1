"""The learning backlog as ``GET /health`` reports it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from liz.learning_queue.jobs import backlog

if TYPE_CHECKING:
    from liz.runtime import Runtime

logger = logging.getLogger(__name__)


async def learning_backlog(runtime: Runtime) -> dict[str, Any]:
    """``{"pending", "failed", "oldestPendingSeconds"}``; never raises."""
    try:
        async with runtime.sessions() as session:
            found = await backlog(session)
    except Exception as exc:  # the health check reports, it never fails itself
        logger.warning("health check: cannot read the learning queue: %s", exc)
        return {"status": f"unknown: {type(exc).__name__}"}
    age = found.oldest_age_seconds(runtime.clock.now())
    return {
        "pending": found.pending,
        "failed": found.failed,
        "oldestPendingSeconds": round(age, 1) if age is not None else None,
    }
