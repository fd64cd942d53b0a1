"""Sending: a reply is planned in the turn's own transaction, then sent part by part.

The platform and the database share no transaction. A part's row notes when its
send call began before the call is made, and is marked sent as soon as the answer
is back. Parts are sent one at a time, so at most one is ever between the two.
Telegram cannot be asked whether it took a message (a bot cannot read its own
chat history), so a part whose call began and was never marked sent is sent again:
the one part in flight when the process died (or whose answer was lost) may arrive
twice. Each attempt at a part carries the same key, by which a platform that can
(Discord's nonce) recognises the repeat and posts nothing. Every other part is
sent exactly once, and none is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from liz.connectors.errors import ConnectorRateLimited, ConnectorRejected
from liz.connectors.inbox import ANSWERED, RECEIVED
from liz.connectors.platform import ChatPlatform
from liz.connectors.tables import (
    ConnectorInboxRecord,
    ConnectorOutboxRecord,
    from_row,
    select_rows,
)
from liz.db.driver import Bound, Statement, connect
from liz.types import Clock

logger = logging.getLogger(__name__)
T = TypeVar("T")

PLANNED, SENT, DROPPED = "planned", "sent", "dropped"

_OUTBOX, _INBOX = ConnectorOutboxRecord, ConnectorInboxRecord
_PLAN = Statement(
    insert(_OUTBOX).values(
        {
            **{
                column: bindparam(column)
                for column in ("bot_key", "message_key", "position", "chat_id", "text", "reply_to")
            },
            "state": PLANNED,
            "created_at": bindparam("at"),
        }
    )
)
_ANSWERED = Statement(
    update(_INBOX)
    .where(
        _INBOX.bot_key == bindparam("bot_key"),
        _INBOX.message_key == bindparam("message_key"),
        _INBOX.state == RECEIVED,
    )
    .values(state=ANSWERED, answered_at=bindparam("at"))
)
# A platform's rate limit is waited out this many times per part before the loop
# moves on to reading (and tries the part again after).
_RATE_LIMIT_WAITS = 5


def reply_statements(
    message: ConnectorInboxRecord, parts: Sequence[str], at: datetime
) -> list[Bound]:
    """The rows that plan the reply's parts and mark ``message`` answered, to commit with
    the reply itself."""
    key = {"bot_key": message.bot_key, "message_key": message.message_key}
    planned = [
        _PLAN.bind(
            **key,
            position=position,
            chat_id=message.chat_id,
            text=text,
            reply_to=message.reply_to,
            at=at,
        )
        for position, text in enumerate(parts)
    ]
    answered = _ANSWERED.bind(**key, at=at)
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
        await _mark(engine, _MARK_ATTEMPTED, row, attempted_at=clock.now())
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
                await _mark(engine, _MARK_DONE, row, state=DROPPED, sent_id=None)
                break
            sent += 1
            break
    return sent


async def _send_and_note(
    platform: ChatPlatform, engine: AsyncEngine, row: ConnectorOutboxRecord
) -> str:
    key = f"{row.message_key}:{row.position}"
    message_id = await platform.send(row.chat_id, row.text, reply_to=row.reply_to, key=key)
    await _mark(engine, _MARK_DONE, row, state=SENT, sent_id=message_id)
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


def _marking(*columns: str) -> Statement:
    """The update of one outbox row's ``columns``."""
    return Statement(
        update(_OUTBOX)
        .where(
            _OUTBOX.bot_key == bindparam("row_bot_key"),
            _OUTBOX.message_key == bindparam("row_message_key"),
            _OUTBOX.position == bindparam("row_position"),
        )
        .values({column: bindparam(column) for column in columns})
    )


_MARK_ATTEMPTED = _marking("attempted_at")
_MARK_DONE = _marking("state", "sent_id")


async def _mark(
    engine: AsyncEngine, statement: Statement, row: ConnectorOutboxRecord, **values: object
) -> None:
    """One outbox row's update, straight to the driver: two per part sent."""
    async with connect(engine) as db:
        await db.commit(
            statement.bind(
                row_bot_key=row.bot_key,
                row_message_key=row.message_key,
                row_position=row.position,
                **values,
            )
        )


_PLANNED = Statement(
    select_rows(_OUTBOX)
    .where(_OUTBOX.bot_key == bindparam("bot_key"), _OUTBOX.state == PLANNED)
    .order_by(_OUTBOX.created_at, _OUTBOX.message_key, _OUTBOX.position)
)


async def _planned(engine: AsyncEngine, bot_key: str) -> list[ConnectorOutboxRecord]:
    """The bot's parts to send, in order, in one hop to the driver: read after every answer."""
    async with connect(engine) as db:
        rows = await db.fetch(_PLANNED, bot_key=bot_key)
    return [from_row(_OUTBOX, row) for row in rows]
