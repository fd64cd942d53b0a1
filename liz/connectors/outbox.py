"""Sending: a reply is planned in the turn's own transaction, then sent part by part.

The platform and the database share no transaction. A part's row notes when its
send call began before the call is made, and is marked sent after. A chat
platform cannot be asked whether it took a message (a bot cannot read its own
chat history), so a part whose call began and was never marked sent is sent
again at the next start: the one part in flight when the process died may arrive
twice. Every other part is sent exactly once, and none is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from liz.connectors.errors import ConnectorRateLimited, ConnectorRejected
from liz.connectors.inbox import ANSWERED, RECEIVED
from liz.connectors.platform import ChatPlatform
from liz.connectors.tables import ConnectorInboxRecord, ConnectorOutboxRecord
from liz.db.driver import Bound, Statement, connect
from liz.db.types import read_utc
from liz.types import Clock

logger = logging.getLogger(__name__)
T = TypeVar("T")

PLANNED, SENT, DROPPED = "planned", "sent", "dropped"

_PLAN = Statement.of(
    'INSERT INTO "ConnectorOutbox" ("botKey", "messageKey", "position", "chatId", "text", '
    '"replyTo", "state", "attemptedAt", "sentId", "createdAt") '
    "VALUES ({}, {}, {}, {}, {}, {}, {}, NULL, NULL, {})"
)
_ANSWERED = Statement.of(
    'UPDATE "ConnectorInbox" SET "state" = {}, "answeredAt" = {} '
    'WHERE "botKey" = {} AND "messageKey" = {} AND "state" = {}'
)
# A platform's rate limit is waited out this many times per part before the loop
# moves on to reading (and tries the part again after).
_RATE_LIMIT_WAITS = 5


def reply_statements(
    message: ConnectorInboxRecord, parts: Sequence[str], at: datetime
) -> list[Bound]:
    """The rows that plan the reply's parts and mark ``message`` answered, to commit with
    the reply itself."""
    planned = [
        _PLAN.bind(
            message.bot_key,
            message.message_key,
            position,
            message.chat_id,
            text,
            message.reply_to,
            PLANNED,
            at,
        )
        for position, text in enumerate(parts)
    ]
    answered = _ANSWERED.bind(ANSWERED, at, message.bot_key, message.message_key, RECEIVED)
    return [*planned, answered]


async def send_unsent(
    platform: ChatPlatform,
    engine: AsyncEngine,
    bot_key: str,
    clock: Clock,
) -> int:
    """Send every planned part of the bot's replies, in order; how many were sent.

    A rate limit is waited out as the platform asks; a part the platform refuses for
    good is dropped (logged), so one gone chat never holds up the others; any other
    failure is raised with the part kept, to be sent on the next call.
    """
    rows = await _planned(engine, bot_key)
    sent = 0
    for row in rows:
        if row.attempted_at is not None:
            logger.warning(
                "%s: part %d of the reply to %s may have been sent before the last stop; "
                "sending it again",
                bot_key,
                row.position + 1,
                row.message_key,
            )
        where = (row.bot_key, row.message_key, row.position)
        await _mark(engine, _MARK_ATTEMPTED, clock.now(), *where)
        waits = 0
        while True:
            try:
                # A stop (Ctrl-C, SIGTERM) waits for the call and its note: a clean stop
                # leaves no part whose fate is unknown.
                await _whole(_send_and_note(platform, engine, row))
            except ConnectorRateLimited as exc:
                waits += 1
                if waits > _RATE_LIMIT_WAITS:
                    raise
                logger.warning("%s: rate limited; waiting %gs", bot_key, exc.wait_seconds)
                await clock.sleep(exc.wait_seconds)
                continue
            except ConnectorRejected as exc:
                logger.error(
                    "%s: the platform refused part %d of the reply to %s: %s; dropped",
                    *(bot_key, row.position + 1, row.message_key, exc.message),
                )
                await _mark(engine, _MARK_DONE, DROPPED, None, *where)
                break
            sent += 1
            break
    return sent


async def _send_and_note(
    platform: ChatPlatform, engine: AsyncEngine, row: ConnectorOutboxRecord
) -> str:
    message_id = await platform.send(row.chat_id, row.text, reply_to=row.reply_to)
    await _mark(engine, _MARK_DONE, SENT, message_id, row.bot_key, row.message_key, row.position)
    return message_id


async def _whole(work: Coroutine[Any, Any, T]) -> T:
    """``await work``, finished even when the caller is cancelled meanwhile."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await task
        raise


async def backlog(session: AsyncSession, bot_key: str) -> int:
    """How many parts of the bot's replies wait to be sent."""
    found = await session.scalar(
        select(func.count()).where(
            ConnectorOutboxRecord.bot_key == bot_key, ConnectorOutboxRecord.state == PLANNED
        )
    )
    return int(found or 0)


_MARK_ATTEMPTED = Statement.of(
    'UPDATE "ConnectorOutbox" SET "attemptedAt" = {} '
    'WHERE "botKey" = {} AND "messageKey" = {} AND "position" = {}'
)
_MARK_DONE = Statement.of(
    'UPDATE "ConnectorOutbox" SET "state" = {}, "sentId" = {} '
    'WHERE "botKey" = {} AND "messageKey" = {} AND "position" = {}'
)


async def _mark(engine: AsyncEngine, statement: Statement, *values: object) -> None:
    """One outbox row's update, straight to the driver: two per part sent."""
    async with connect(engine) as db:
        await db.commit(statement.bind(*values))


_PLANNED = Statement.of(
    'SELECT "botKey", "messageKey", "position", "chatId", "text", "replyTo", "state", '
    '"attemptedAt", "sentId", "createdAt" FROM "ConnectorOutbox" '
    'WHERE "botKey" = {} AND "state" = {} ORDER BY "createdAt", "messageKey", "position"'
)


async def _planned(engine: AsyncEngine, bot_key: str) -> list[ConnectorOutboxRecord]:
    """The bot's parts to send, in order, in one hop to the driver: read after every answer."""
    async with connect(engine) as db:
        rows = await db.fetch(_PLANNED, bot_key, PLANNED)
    return [
        ConnectorOutboxRecord(
            bot_key=row[0],
            message_key=row[1],
            position=row[2],
            chat_id=row[3],
            text=row[4],
            reply_to=row[5],
            state=row[6],
            attempted_at=None if row[7] is None else read_utc(row[7]),
            sent_id=row[8],
            created_at=read_utc(row[9]),
        )
        for row in rows
    ]
