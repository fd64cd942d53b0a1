"""``GET /metrics``: liz's Prometheus metrics, behind the API key unless LIZ_METRICS_PUBLIC.

The learning queue's backlog and the chat bots' state are read from the database as
the metrics are asked for.
"""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from liz.connectors.status import bot_statuses
from liz.learning_queue.jobs import backlog
from liz.observe.metrics import (
    CONNECTOR_ANSWERED,
    CONNECTOR_BACKLOG,
    CONNECTOR_LAST_POLL,
    LEARNING_BACKLOG,
    LEARNING_OLDEST,
    exposition,
)

logger = logging.getLogger(__name__)

METRICS_PATH = "/metrics"


async def metrics(request: Request) -> Response:
    framework = getattr(request.app.state, "framework", None)
    if framework is not None:
        try:
            async with framework.runtime.reads() as session:  # never waits for a writer
                found = await backlog(session)
            LEARNING_BACKLOG.set(found.pending)
            age = found.oldest_age_seconds(framework.runtime.clock.now())
            LEARNING_OLDEST.set(age or 0.0)
        except Exception as exc:  # the other metrics still answer during an outage
            logger.warning("GET /metrics could not read the learning queue: %r", exc)
        try:
            async with framework.runtime.reads() as session:
                bots = await bot_statuses(session)
            for bot in bots:
                CONNECTOR_BACKLOG.labels(bot.platform).set(bot.to_answer + bot.to_send)
                CONNECTOR_ANSWERED.labels(bot.platform).set(bot.answered)
                CONNECTOR_LAST_POLL.labels(bot.platform).set(bot.last_poll.timestamp())
        except Exception as exc:
            logger.warning("GET /metrics could not read the chat bots: %r", exc)
    body, content_type = exposition()
    return Response(body, media_type=content_type)


class PublicMetrics:
    """Answers ``GET /metrics`` before the key is asked for (LIZ_METRICS_PUBLIC=true)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == METRICS_PATH:
            response = await metrics(Request(scope, receive))
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
