"""liz's Prometheus metrics, and the text ``GET /metrics`` answers with.

Labels are bounded: agent ids, route names, statuses, model names and purposes; never a
user. Several worker processes on one machine: set ``PROMETHEUS_MULTIPROC_DIR`` to an
empty folder before they start (prometheus-client's multiprocess mode); each process
writes its samples there and any of them answers with the sum.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

# No `_created` series beside each counter: they doubled what every scrape renders.
disable_created_metrics()  # type: ignore[no-untyped-call]

TURNS = Counter("liz_turns", "Turns by agent, route and status.", ["agent", "route", "status"])
TURN_SECONDS = Histogram(
    "liz_turn_duration_seconds",
    "How long a turn took, from the chain's start to its answer.",
    ["agent"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
LLM_CALLS = Counter("liz_llm_calls", "LLM requests by model and purpose.", ["model", "purpose"])
LLM_TOKENS = Counter(
    "liz_llm_tokens",
    "Tokens the provider reported, by model, purpose and direction (input, output).",
    ["model", "purpose", "direction"],
)
FACT_CHANGES = Counter("liz_fact_changes", "Facts learned, updated and retired.", ["change"])
TWITTER_ACTIONS = Counter("liz_twitter_tweets", "Tweets the bot read and posted.", ["action"])
LEARNING_BACKLOG = Gauge(
    "liz_learning_backlog_jobs",
    "Learning jobs waiting (read from the database when scraped).",
    multiprocess_mode="mostrecent",
)
LEARNING_OLDEST = Gauge(
    "liz_learning_oldest_job_age_seconds",
    "Age of the oldest waiting learning job (0 when none waits).",
    multiprocess_mode="mostrecent",
)
# Chat bots (liz.connectors), by platform; read from the database when scraped.
CONNECTOR_BACKLOG = Gauge(
    "liz_connector_backlog_messages",
    "Messages a chat bot has still to answer or send.",
    ["platform"],
    multiprocess_mode="mostrecent",
)
CONNECTOR_ANSWERED = Gauge(
    "liz_connector_answered_messages",
    "Messages a chat bot has answered, all time.",
    ["platform"],
    multiprocess_mode="mostrecent",
)
CONNECTOR_LAST_POLL = Gauge(
    "liz_connector_last_poll_timestamp_seconds",
    "When a chat bot last read its platform (Unix time).",
    ["platform"],
    multiprocess_mode="mostrecent",
)
DB_POOL_IN_USE = Gauge(
    "liz_db_pool_in_use_connections",
    "Database connections checked out of the pool.",
    multiprocess_mode="livesum",
)


def turn(agent: str, route: str | None, status: str, seconds: float) -> None:
    TURNS.labels(agent, route or "none", status).inc()
    TURN_SECONDS.labels(agent).observe(seconds)


def llm_call(model: str, purpose: str, input_tokens: int, output_tokens: int) -> None:
    LLM_CALLS.labels(model, purpose).inc()
    if input_tokens:
        LLM_TOKENS.labels(model, purpose, "input").inc(input_tokens)
    if output_tokens:
        LLM_TOKENS.labels(model, purpose, "output").inc(output_tokens)


def fact_changes(learned: int = 0, updated: int = 0, retired: int = 0) -> None:
    for change, count in (("learned", learned), ("updated", updated), ("retired", retired)):
        if count:
            FACT_CHANGES.labels(change).inc(count)


def twitter(action: str, count: int = 1) -> None:
    """Tweets read (``read``) or posted (``post``)."""
    if count:
        TWITTER_ACTIONS.labels(action).inc(count)


def watch_pool(engine: Any) -> None:
    """Count the engine's checked-out connections in ``liz_db_pool_in_use_connections``."""
    from sqlalchemy import event

    pool = engine.sync_engine.pool
    if getattr(pool, "_liz_watched", False):
        return
    pool._liz_watched = True
    event.listen(pool, "checkout", lambda *_: DB_POOL_IN_USE.inc())
    event.listen(pool, "checkin", lambda *_: DB_POOL_IN_USE.dec())


def exposition() -> tuple[bytes, str]:
    """The metrics in the Prometheus text format, and its content type."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
