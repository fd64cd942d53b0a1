"""Each chat bot as ``GET /health`` and ``GET /metrics`` show it, read from the database.

The bot runs in its own process (``liz telegram run``); what the server knows of it
is what that process wrote: when it last read its platform, what waits, what it
answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from liz.connectors.inbox import ANSWERED, FAILED, RECEIVED
from liz.connectors.outbox import PLANNED
from liz.connectors.tables import (
    ConnectorCursorRecord,
    ConnectorInboxRecord,
    ConnectorOutboxRecord,
)


@dataclass(frozen=True)
class BotStatus:
    """One bot: ``telegram:123``, its last read, and its messages by state."""

    bot_key: str
    last_poll: datetime
    to_answer: int  # received, not answered yet
    to_send: int  # reply parts planned, not sent yet
    answered: int
    failed: int

    @property
    def platform(self) -> str:
        return self.bot_key.partition(":")[0]

    def as_fields(self, now: datetime) -> dict[str, object]:
        """The fields of ``/health``'s ``connectors`` entry (liz.http.bodies.ConnectorStatus)."""
        return {
            "bot": self.bot_key,
            "last_poll": self.last_poll.isoformat(),
            "last_poll_seconds_ago": round((now - self.last_poll).total_seconds(), 1),
            "backlog": self.to_answer + self.to_send,
            "answered": self.answered,
            "failed": self.failed,
        }


async def bot_statuses(session: AsyncSession) -> list[BotStatus]:
    """Every bot that ever read its platform through this database."""
    cursors = (await session.execute(select(ConnectorCursorRecord))).scalars().all()
    if not cursors:
        return []
    messages: dict[tuple[str, str], int] = {}
    rows = await session.execute(
        select(ConnectorInboxRecord.bot_key, ConnectorInboxRecord.state, func.count()).group_by(
            ConnectorInboxRecord.bot_key, ConnectorInboxRecord.state
        )
    )
    for bot_key, state, count in rows:
        messages[(bot_key, state)] = int(count)
    unsent = await session.execute(
        select(ConnectorOutboxRecord.bot_key, func.count())
        .where(ConnectorOutboxRecord.state == PLANNED)
        .group_by(ConnectorOutboxRecord.bot_key)
    )
    to_send = {bot_key: int(count) for bot_key, count in unsent}
    return [
        BotStatus(
            bot_key=cursor.bot_key,
            last_poll=cursor.polled_at,
            to_answer=messages.get((cursor.bot_key, RECEIVED), 0),
            to_send=to_send.get(cursor.bot_key, 0),
            answered=messages.get((cursor.bot_key, ANSWERED), 0),
            failed=messages.get((cursor.bot_key, FAILED), 0),
        )
        for cursor in sorted(cursors, key=lambda row: row.bot_key)
    ]
