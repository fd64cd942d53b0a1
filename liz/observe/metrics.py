"""liz's Prometheus metrics, and the text ``GET /metrics`` answers with.

Labels are bounded: agent ids, route names, statuses, model names and purposes; never a
user. Several worker processes on one machine: set ``PROMETHEUS_MULTIPROC_DIR`` to an
empty folder before they start (prometheus-client's multiprocess mode); each process
writes its samples there and any of them answers with the sum.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
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
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from liz.observe.usage import CallUsage

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
    "Tokens the provider reported, by model, purpose and direction (input, output, and "
    "cached_input: the part of input its prompt cache served).",
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
AGENT_TOKENS = Counter(
    "liz_agent_llm_tokens",
    "LLM tokens by agent and direction (input, cached_input: the part of input the prompt "
    "cache served, output).",
    ["agent", "direction"],
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


def llm_call(call: CallUsage, agent: str | None = None) -> None:
    LLM_CALLS.labels(call.model, call.purpose).inc()
    tokens = {
        "input": call.input_tokens,
        "cached_input": call.cached_input_tokens,
        "output": call.output_tokens,
    }
    for direction, count in tokens.items():
        if count:
            LLM_TOKENS.labels(call.model, call.purpose, direction).inc(count)
            if agent is not None:
                AGENT_TOKENS.labels(agent, direction).inc(count)


def fact_changes(learned: int = 0, updated: int = 0, retired: int = 0) -> None:
    for change, count in (("learned", learned), ("updated", updated), ("retired", retired)):
        if count:
            FACT_CHANGES.labels(change).inc(count)


def twitter(action: str, count: int = 1) -> None:
    """Tweets read (``read``) or posted (``post``)."""
    if count:
        TWITTER_ACTIONS.labels(action).inc(count)


def watch_pool(engine: Any) -> None:
    """Count the engine's checked-out connections in ``liz_db_pool_in_use_connections``;
    watching a pool twice counts it once."""
    from sqlalchemy import event

    pool = engine.sync_engine.pool
    if not event.contains(pool, "checkout", _checked_out):
        event.listen(pool, "checkout", _checked_out)
        event.listen(pool, "checkin", _checked_in)


def _checked_out(*_: Any) -> None:
    DB_POOL_IN_USE.inc()


def _checked_in(*_: Any) -> None:
    DB_POOL_IN_USE.dec()


class CacheShare(Collector):
    """``liz_agent_llm_cache_share``: per agent, the part of the input tokens counted so
    far that the prompt cache served, from the counters ``source`` collects (this
    process's, or every process's in multiprocess mode)."""

    def __init__(self, source: Callable[[], Iterable[Metric]]) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        counted: dict[str, dict[str, float]] = {}
        for family in self._source():
            if family.name != "liz_agent_llm_tokens":
                continue
            for sample in family.samples:
                if sample.name == "liz_agent_llm_tokens_total":
                    tokens = counted.setdefault(sample.labels["agent"], {})
                    tokens[sample.labels["direction"]] = sample.value
        share = GaugeMetricFamily(
            "liz_agent_llm_cache_share",
            "The part of each agent's LLM input tokens the prompt cache served.",
            labels=["agent"],
        )
        for agent, spent in sorted(counted.items()):
            if spent.get("input"):
                share.add_metric([agent], spent.get("cached_input", 0.0) / spent["input"])
        yield share


REGISTRY.register(CacheShare(AGENT_TOKENS.collect))


def exposition() -> tuple[bytes, str]:
    """The metrics in the Prometheus text format, and its content type."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        collector = multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        registry.register(CacheShare(collector.collect))
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
