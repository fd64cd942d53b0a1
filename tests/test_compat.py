"""Each use of another library's private names (liz/_compat.py) still works with the
installed release; when a library changes shape, its test fails saying which use broke
and what to do, and pyproject.toml keeps each such library below its next series."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import sqlite3
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import create_async_engine
from uvicorn import Config
from uvicorn.server import ServerState

from liz import _compat

pytestmark = pytest.mark.anyio
PYPROJECT = Path(__file__).parent.parent / "pyproject.toml"
# The libraries liz/_compat.py reaches into, as pyproject.toml names them.
REACHED_INTO = ("sqlalchemy", "aiosqlite", "uvicorn", "twikit", "opentelemetry-sdk")


@contextmanager
def shape_of(library: str, use: str) -> Iterator[None]:
    """Turn a failure inside ``use`` into one message naming the library's version."""
    try:
        yield
    except (AttributeError, TypeError, KeyError, AssertionError) as exc:
        pytest.fail(
            f"{library} {version(library)} no longer has the shape liz._compat.{use} relies "
            f"on ({type(exc).__name__}: {exc}). Keep {library} to the versions liz/_compat.py "
            "names (pyproject.toml, constraints.txt), or update that use for this release.",
            pytrace=False,
        )


async def test_aiosqlite_runs_a_function_on_the_connections_thread(tmp_path: Path) -> None:
    def add_and_count(db: sqlite3.Connection, name: str) -> int:
        db.execute("CREATE TABLE IF NOT EXISTS t (name TEXT)")
        db.execute("INSERT INTO t VALUES (?)", (name,))
        return int(db.execute("SELECT count(*) FROM t").fetchone()[0])

    async with aiosqlite.connect(tmp_path / "a.db") as connection:
        with shape_of("aiosqlite", "run_on_sqlite_thread"):
            assert await _compat.run_on_sqlite_thread(connection, add_and_count, "ada") == 1
            assert await _compat.run_on_sqlite_thread(connection, add_and_count, "bo") == 2


async def test_sqlalchemys_aiosqlite_adapter_takes_the_one_hop_cursor(tmp_path: Path) -> None:
    engine = create_async_engine(
        f"sqlite+aiosqlite:///{tmp_path}/b.db", module=_compat.one_hop_dbapi()
    )
    try:
        with shape_of("sqlalchemy", "one_hop_dbapi"):
            raw = await engine.raw_connection()
            try:
                assert isinstance(raw.dbapi_connection.cursor(), _compat.OneHopCursor)  # type: ignore[union-attr]
            finally:
                raw.close()
            async with engine.begin() as connection:
                await connection.execute(
                    text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)")
                )
                inserted = await connection.execute(text("INSERT INTO t (name) VALUES ('a')"))
                assert inserted.lastrowid == 1
                many = await connection.execute(
                    text("INSERT INTO t (name) VALUES (:name)"), [{"name": "b"}, {"name": "c"}]
                )
                assert many.rowcount == 2
                rows = (await connection.execute(text("SELECT id, name FROM t ORDER BY id"))).all()
                assert [tuple(row) for row in rows] == [(1, "a"), (2, "b"), (3, "c")]
            with pytest.raises(IntegrityError, match="UNIQUE"):
                async with engine.begin() as connection:
                    await connection.execute(text("INSERT INTO t (name) VALUES ('a')"))
    finally:
        await engine.dispose()


async def test_uvicorns_h11_protocol_tells_when_a_requests_headers_are_pending() -> None:
    answered = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await answered.wait()  # the request stays in progress while it is looked at
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    config = Config(app, lifespan="off", log_config=None, access_log=False)
    with shape_of("uvicorn", "awaiting_request_headers"):
        protocol = _compat.H11Protocol(config, ServerState(), {})
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, sock=ours)
        try:
            assert _compat.awaiting_request_headers(protocol)  # nothing sent yet
            theirs.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            await asyncio.sleep(0.05)
            assert _compat.awaiting_request_headers(protocol)  # half the headers
            theirs.sendall(b"\r\n")
            await asyncio.sleep(0.05)
            assert not _compat.awaiting_request_headers(protocol)  # a whole request
        finally:
            answered.set()
            await asyncio.sleep(0.05)
            transport.close()
            theirs.close()


def test_twikit_tweets_carry_their_conversation_id() -> None:
    twikit = pytest.importorskip(
        "twikit", reason="twikit is not installed: pip install 'liz-agents[twikit]'"
    )
    data = {"rest_id": "12", "legacy": {"conversation_id_str": "10", "full_text": "hi"}}
    with shape_of("twikit", "twikit_conversation_id"):
        tweet = twikit.tweet.Tweet(None, data, None)
        assert _compat.twikit_conversation_id(tweet) == "10"
        assert tweet.id == "12"


def test_the_span_batch_processor_says_queue_full_on_the_named_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Never(SpanExporter):  # takes nothing: the queue stays full
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider(shutdown_on_exit=False)
    processor = BatchSpanProcessor(
        Never(), max_queue_size=2, max_export_batch_size=2, schedule_delay_millis=60_000
    )
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("compat")
    named = logging.getLogger(_compat.OTEL_BATCH_QUEUE_LOGGER)
    kept, named.filters = named.filters, []  # the SDK's own lines, not liz's summary
    try:
        with caplog.at_level("WARNING", logger=named.name):
            for _ in range(20):
                tracer.start_span("s").end()
    finally:
        named.filters = kept
        provider.shutdown()
    said = [r for r in caplog.records if r.name == _compat.OTEL_BATCH_QUEUE_LOGGER]
    if not [r for r in said if str(r.msg).startswith("Queue full")]:
        pytest.fail(
            f"opentelemetry-sdk {version('opentelemetry-sdk')} no longer says 'Queue full' on "
            f"{_compat.OTEL_BATCH_QUEUE_LOGGER}: update liz._compat.OTEL_BATCH_QUEUE_LOGGER "
            "(liz.observe.span_export filters it) or keep the SDK below this release.",
            pytrace=False,
        )


def test_each_library_reached_into_has_an_upper_bound() -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    extras = project["optional-dependencies"].values()
    wanted = [*project["dependencies"], *(r for extra in extras for r in extra)]
    for library in REACHED_INTO:
        (spec,) = [w for w in wanted if re.match(rf"{library}\b", w, re.IGNORECASE)]
        assert "<" in spec, f"give {library} an upper bound in pyproject.toml (liz/_compat.py)"
