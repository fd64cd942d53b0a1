"""Receiving: each message is stored in the transaction that moves the bot's cursor.

The platform is told it may forget a message only by the next read, which starts
after the stored cursor. So a message is either in ``ConnectorInbox`` or still
held by the platform: a crash at any moment loses none.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from liz.connectors.platform import Batch
from liz.connectors.tables import (
    ConnectorCursorRecord,
    ConnectorInboxRecord,
    from_row,
    select_rows,
)
from liz.db.driver import Statement, connect

RECEIVED, ANSWERED, FAILED = "received", "answered", "failed"
_INBOX, _CURSOR = ConnectorInboxRecord, ConnectorCursorRecord


async def cursor(session: AsyncSession, bot_key: str) -> str | None:
    """Where the bot's last stored read ended; None before its first."""
    row = await session.get(ConnectorCursorRecord, bot_key)
    return None if row is None else row.position


# PostgreSQL's insert construct, whose ON CONFLICT clauses compile for SQLite too.
_STORE = Statement(
    pg_insert(_INBOX)
    .values(
        {
            **{
                field: bindparam(field)
                for field in (
                    "bot_key",
                    "message_key",
                    "sequence",
                    "agent_id",
                    "user_id",
                    "room_id",
                    "chat_id",
                    "text",
                    "reply_to",
                )
            },
            "state": RECEIVED,
            "attempts": 0,
            "received_at": bindparam("at"),
        }
    )
    .on_conflict_do_nothing(index_elements=[_INBOX.bot_key, _INBOX.message_key])
)


def _moving_cursor(*, to_position: bool) -> Statement:
    """The upsert of a bot's cursor: its poll time, and its position when ``to_position``."""
    values: dict[str, Any] = {"bot_key": bindparam("bot_key"), "polled_at": bindparam("at")}
    upsert = pg_insert(_CURSOR).values(
        {**values, "position": bindparam("position") if to_position else ""}
    )
    moved = [_CURSOR.polled_at, *([_CURSOR.position] if to_position else [])]
    return Statement(
        upsert.on_conflict_do_update(
            index_elements=[_CURSOR.bot_key],
            set_={column: upsert.excluded[column.name] for column in moved},
        )
    )


_MOVE = _moving_cursor(to_position=True)
_POLLED = _moving_cursor(to_position=False)
_WAITING = Statement(
    select_rows(_INBOX)
    .where(_INBOX.bot_key == bindparam("bot_key"), _INBOX.state == RECEIVED)
    .order_by(_INBOX.sequence, _INBOX.message_key)
    .limit(bindparam("limit"))
)


async def store_batch(
    engine: AsyncEngine, *, bot_key: str, agent_id: str, batch: Batch, at: datetime
) -> None:
    """Store the batch's messages and move the cursor past it, in one transaction.

    A message stored before, by a read not confirmed, is kept as it is. One hop to the
    driver (liz.db.driver): this runs once per read, so once per message when they
    come one at a time.
    """
    stored = [
        _STORE.bind(
            bot_key=bot_key,
            message_key=message.message_key,
            sequence=message.sequence,
            agent_id=agent_id,
            user_id=message.user_id,
            room_id=message.room_id,
            chat_id=message.chat_id,
            text=message.text,
            reply_to=message.reply_to,
            at=at,
        )
        for message in batch.messages
    ]
    moved = (
        _POLLED.bind(bot_key=bot_key, at=at)
        if batch.position is None
        else _MOVE.bind(bot_key=bot_key, position=batch.position, at=at)
    )
    async with connect(engine) as db:
        await db.commit(*stored, moved)


async def to_answer(engine: AsyncEngine, bot_key: str, limit: int) -> list[ConnectorInboxRecord]:
    """The bot's messages still to answer, oldest first (rows not tied to a session)."""
    async with connect(engine) as db:
        rows = await db.fetch(_WAITING, bot_key=bot_key, limit=limit)
    return [from_row(_INBOX, row) for row in rows]


async def count_tried(session: AsyncSession, row: ConnectorInboxRecord) -> None:
    """One more attempt at answering ``row`` failed for now (the caller commits)."""
    await session.execute(
        update(ConnectorInboxRecord)
        .where(
            ConnectorInboxRecord.bot_key == row.bot_key,
            ConnectorInboxRecord.message_key == row.message_key,
        )
        .values(attempts=ConnectorInboxRecord.attempts + 1)
    )


async def give_up(session: AsyncSession, row: ConnectorInboxRecord, at: datetime) -> None:
    """``row`` will not be answered (refused for good); the caller commits."""
    await session.execute(
        update(ConnectorInboxRecord)
        .where(
            ConnectorInboxRecord.bot_key == row.bot_key,
            ConnectorInboxRecord.message_key == row.message_key,
        )
        .values(state=FAILED, answered_at=at)
    )


async def counts(session: AsyncSession, bot_key: str) -> dict[str, int]:
    """How many of the bot's messages are in each state."""
    rows = await session.execute(
        select(ConnectorInboxRecord.state, func.count())
        .where(ConnectorInboxRecord.bot_key == bot_key)
        .group_by(ConnectorInboxRecord.state)
    )
    return {state: int(count) for state, count in rows}
