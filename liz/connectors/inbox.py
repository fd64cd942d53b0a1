"""Receiving: each message is stored in the transaction that moves the bot's cursor.

The platform is told it may forget a message only by the next read, which starts
after the stored cursor. So a message is either in ``ConnectorInbox`` or still
held by the platform: a crash at any moment loses none.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from liz.connectors.platform import Batch
from liz.connectors.tables import ConnectorCursorRecord, ConnectorInboxRecord

RECEIVED, ANSWERED, FAILED = "received", "answered", "failed"


async def cursor(session: AsyncSession, bot_key: str) -> str | None:
    """Where the bot's last stored read ended; None before its first."""
    row = await session.get(ConnectorCursorRecord, bot_key)
    return None if row is None else row.position


async def store_batch(
    session: AsyncSession, *, bot_key: str, agent_id: str, batch: Batch, at: datetime
) -> int:
    """Store the batch's messages and move the cursor past it (the caller commits);
    how many messages are new (one stored before, by a read not confirmed, is kept)."""
    new = 0
    for message in batch.messages:
        if await session.get(ConnectorInboxRecord, (bot_key, message.message_key)) is not None:
            continue
        session.add(
            ConnectorInboxRecord(
                bot_key=bot_key,
                message_key=message.message_key,
                sequence=message.sequence,
                agent_id=agent_id,
                user_id=message.user_id,
                room_id=message.room_id,
                chat_id=message.chat_id,
                text=message.text,
                reply_to=message.reply_to,
                state=RECEIVED,
                attempts=0,
                received_at=at,
            )
        )
        new += 1
    row = await session.get(ConnectorCursorRecord, bot_key)
    if row is None:
        session.add(
            ConnectorCursorRecord(bot_key=bot_key, position=batch.position or "", polled_at=at)
        )
    else:
        if batch.position is not None:
            row.position = batch.position
        row.polled_at = at
    await session.flush()
    return new


async def to_answer(session: AsyncSession, bot_key: str, limit: int) -> list[ConnectorInboxRecord]:
    """The bot's messages still to answer, oldest first."""
    rows = await session.scalars(
        select(ConnectorInboxRecord)
        .where(ConnectorInboxRecord.bot_key == bot_key, ConnectorInboxRecord.state == RECEIVED)
        .order_by(ConnectorInboxRecord.sequence, ConnectorInboxRecord.message_key)
        .limit(limit)
    )
    return list(rows)


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
