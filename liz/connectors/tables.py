"""The connectors' own tables: where each bot stopped reading, what it received, what it sends.

A chat platform hands out each message once: Telegram forgets an update once the
next ``getUpdates`` names a later offset. So a message is written to
``ConnectorInbox`` in the same transaction that moves the bot's cursor
(``ConnectorCursor``), before the platform is told it may forget it. The reply is
written to ``ConnectorOutbox``, one row per part, in the same transaction that
stores the agent's reply in the conversation log and marks the message answered;
a part is marked sent once the platform took it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import BigInteger, Index, Integer, PrimaryKeyConstraint, Select, Text, func, select
from sqlalchemy import inspect as inspect_mapped
from sqlalchemy.orm import Mapped, mapped_column

from liz.db.tables import Base
from liz.db.types import UTCDateTime

R = TypeVar("R", bound=Base)


class ConnectorCursorRecord(Base):
    """How far one bot has read its platform's messages, and when it last asked."""

    __tablename__ = "ConnectorCursor"

    # "<platform>:<bot id>", e.g. "telegram:123456".
    bot_key: Mapped[str] = mapped_column("botKey", Text, primary_key=True)
    # The last update id stored (Telegram); the next read starts after it.
    position: Mapped[str] = mapped_column(Text)
    polled_at: Mapped[datetime] = mapped_column("polledAt", UTCDateTime())


class ConnectorInboxRecord(Base):
    """One message a bot received and will answer (or answered, or gave up on)."""

    __tablename__ = "ConnectorInbox"
    __table_args__ = (
        PrimaryKeyConstraint("botKey", "messageKey"),
        Index(None, "botKey", "state"),
    )

    bot_key: Mapped[str] = mapped_column("botKey", Text)
    # "<chat id>:<message id>": unique per bot.
    message_key: Mapped[str] = mapped_column("messageKey", Text)
    # The platform's order of arrival (Telegram's update id): answered in this order.
    sequence: Mapped[int] = mapped_column(BigInteger)
    agent_id: Mapped[str] = mapped_column("agentId", Text)
    user_id: Mapped[str] = mapped_column("userId", Text)  # "telegram:<user id>"
    room_id: Mapped[str] = mapped_column("roomId", Text)  # "telegram:<chat id>"
    chat_id: Mapped[str] = mapped_column("chatId", Text)
    text: Mapped[str] = mapped_column(Text)
    # The platform message the reply answers (None: a plain message in the chat).
    reply_to: Mapped[str | None] = mapped_column("replyTo", Text)
    # "received" (to answer), "answered", or "failed" (refused for good, e.g. a budget).
    state: Mapped[str] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    received_at: Mapped[datetime] = mapped_column(
        "receivedAt", UTCDateTime(), server_default=func.current_timestamp()
    )
    answered_at: Mapped[datetime | None] = mapped_column("answeredAt", UTCDateTime())


class ConnectorOutboxRecord(Base):
    """One part of a reply a bot means to send, and whether the platform took it."""

    __tablename__ = "ConnectorOutbox"
    __table_args__ = (
        PrimaryKeyConstraint("botKey", "messageKey", "position"),
        Index(None, "botKey", "state"),
    )

    bot_key: Mapped[str] = mapped_column("botKey", Text)
    message_key: Mapped[str] = mapped_column("messageKey", Text)  # the message it answers
    position: Mapped[int] = mapped_column(Integer)  # 0 is the reply's first part
    chat_id: Mapped[str] = mapped_column("chatId", Text)
    text: Mapped[str] = mapped_column(Text)
    reply_to: Mapped[str | None] = mapped_column("replyTo", Text)
    state: Mapped[str] = mapped_column(Text)  # "planned" or "sent"
    # When the last send call began: set while "planned", the part may be out already.
    attempted_at: Mapped[datetime | None] = mapped_column("attemptedAt", UTCDateTime())
    sent_id: Mapped[str | None] = mapped_column("sentId", Text)  # the platform's message id
    created_at: Mapped[datetime] = mapped_column(
        "createdAt", UTCDateTime(), server_default=func.current_timestamp()
    )


def select_rows(record: type[R]) -> Select[Any]:
    """A select of every column of ``record``'s table, in the order :func:`from_row` reads."""
    return select(*(getattr(record, field) for field in _fields(record)))


def from_row(record: type[R], row: Any) -> R:
    """The ``record`` a row of :func:`select_rows` holds (not tied to a session)."""
    return record(**dict(zip(_fields(record), row, strict=True)))


def _fields(record: type[Base]) -> list[str]:
    return [attribute.key for attribute in inspect_mapped(record).column_attrs]
