"""The bot's own table: which tweets each X account has dealt with, and how.

``Tweet`` (Liz's table) holds the tweets themselves but not which bot account
handled one or what it decided, so with two bots on one database, or an
"ignore" decision that posts nothing, it cannot tell what is still to do. A row
here, keyed by (account, tweet), is that record; the largest tweet id per
(account, stream) is the persisted since-id cursor.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, PrimaryKeyConstraint, Text, func
from sqlalchemy.orm import Mapped, mapped_column

from liz.db.models import Base
from liz.db.types import UTCDateTime


class HandledTweetRecord(Base):
    """One tweet an X account has dealt with: replied to, ignored, stopped at, or gave up on."""

    __tablename__ = "TwitterHandled"
    __table_args__ = (
        PrimaryKeyConstraint("accountId", "tweetId"),
        Index(None, "accountId", "stream"),
        Index(None, "accountId", "conversationId"),
    )

    account_id: Mapped[str] = mapped_column("accountId", Text)
    tweet_id: Mapped[str] = mapped_column("tweetId", Text)
    # "mentions", or "user:<username>" for a target user's timeline.
    stream: Mapped[str] = mapped_column(Text)
    conversation_id: Mapped[str | None] = mapped_column("conversationId", Text)
    # "replied", "ignored", "stopped", "failed", "skipped" (too old at first start), or
    # "replying": marked before posting, so a reply X took is never posted twice, even
    # if the process died before it could write "replied".
    decision: Mapped[str] = mapped_column(Text)
    handled_at: Mapped[datetime] = mapped_column(
        "handledAt", UTCDateTime(), server_default=func.current_timestamp()
    )
