"""One process per bot reads and answers: the Twitter bot's leader lock, keyed by the bot.

Two processes started for the same bot would both read its updates (Telegram
answers a second ``getUpdates`` with 409) and both answer. The lock is the one
:mod:`liz.twitter.leader` defines (an advisory lock on PostgreSQL, a ``flock`` on a
file beside SQLite's file), keyed by ``<platform>:<bot id>`` instead of an agent.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from liz.twitter.leader import FileLeaderLock, LeaderLock, PostgresLeaderLock


def bot_leader_lock(engine: AsyncEngine, bot_key: str) -> LeaderLock:
    """The lock that fits the database, for the bot ``bot_key`` (``telegram:123``)."""
    key = f"connector:{bot_key}"  # never the same key as an agent's Twitter lock
    if engine.dialect.name == "postgresql":
        return PostgresLeaderLock(engine, key)
    safe = hashlib.blake2b(key.encode("utf-8"), digest_size=8).hexdigest()
    database = engine.url.database
    if database and database != ":memory:" and not database.startswith("file::memory:"):
        return FileLeaderLock(Path(database).with_name(f"{Path(database).name}.bot-{safe}.lock"))
    return FileLeaderLock(Path(tempfile.gettempdir()) / f"liz-bot-{safe}.lock")
