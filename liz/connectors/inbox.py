"""Receiving: each message is stored in the transaction that moves the bot's cursor.

The platform is told it may forget a message only by the next read, which starts
after the stored cursor. So a message is either in ``ConnectorInbox`` or still
held by the platform: a crash at any moment loses none.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from liz.connectors.platform import Batch
from liz.connectors.tables import ConnectorCursorRecord, ConnectorInboxRecord
from liz.db.driver import Statement, connect
from liz.db.types import read_utc

RECEIVED, ANSWERED, FAILED = "received", "answered", "failed"


async def cursor(session: AsyncSession, bot_key: str) -> str | None:
    """Where the bot's last stored read ended; None before its first."""
    row = await session.get(ConnectorCursorRecord, bot_key)
    return None if row is None else row.position


_STORE = Statement.of(
    'INSERT INTO "ConnectorInbox" ("botKey", "messageKey", "sequence", "agentId", "userId", '
    '"roomId", "chatId", "text", "replyTo", "state", "attempts", "receivedAt", "answeredAt") '
    "VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, 0, {}, NULL) "
    'ON CONFLICT ("botKey", "messageKey") DO NOTHING'
)
_MOVE = Statement.of(
    'INSERT INTO "ConnectorCursor" ("botKey", "position", "polledAt") VALUES ({}, {}, {}) '
    'ON CONFLICT ("botKey") DO UPDATE SET "position" = excluded."position", '
    '"polledAt" = excluded."polledAt"'
)
_POLLED = Statement.of(
    'INSERT INTO "ConnectorCursor" ("botKey", "position", "polledAt") VALUES ({}, \'\', {}) '
    'ON CONFLICT ("botKey") DO UPDATE SET "polledAt" = excluded."polledAt"'
)
_WAITING = Statement.of(
    'SELECT "botKey", "messageKey", "sequence", "agentId", "userId", "roomId", "chatId", '
    '"text", "replyTo", "state", "attempts", "receivedAt", "answeredAt" '
    'FROM "ConnectorInbox" WHERE "botKey" = {} AND "state" = {} '
    'ORDER BY "sequence", "messageKey" LIMIT {}'
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
            bot_key,
            message.message_key,
            message.sequence,
            agent_id,
            message.user_id,
            message.room_id,
            message.chat_id,
            message.text,
            message.reply_to,
            RECEIVED,
            at,
        )
        for message in batch.messages
    ]
    moved = (
        _POLLED.bind(bot_key, at)
        if batch.position is None
        else _MOVE.bind(bot_key, batch.position, at)
    )
    async with connect(engine) as db:
        await db.commit(*stored, moved)


async def to_answer(engine: AsyncEngine, bot_key: str, limit: int) -> list[ConnectorInboxRecord]:
    """The bot's messages still to answer, oldest first (rows not tied to a session)."""
    async with connect(engine) as db:
        rows = await db.fetch(_WAITING, bot_key, RECEIVED, limit)
    return [
        ConnectorInboxRecord(
            bot_key=row[0],
            message_key=row[1],
            sequence=row[2],
            agent_id=row[3],
            user_id=row[4],
            room_id=row[5],
            chat_id=row[6],
            text=row[7],
            reply_to=row[8],
            state=row[9],
            attempts=row[10],
            received_at=read_utc(row[11]),
            answered_at=None if row[12] is None else read_utc(row[12]),
        )
        for row in rows
    ]


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
