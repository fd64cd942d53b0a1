"""The bot's own tables: which tweets each X account has dealt with, and what it means to post.

``Tweet`` (Liz's table) holds the tweets themselves but not which bot account
handled one or what it decided, so with two bots on one database, or an
"ignore" decision that posts nothing, it cannot tell what is still to do. A row
here, keyed by (account, tweet), is that record; the largest tweet id per
(account, stream) is the persisted since-id cursor.

``TwitterOutbox`` holds each thread the bot means to post, one row per tweet,
written before the first is posted (:mod:`liz.twitter.outbox` says why).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, PrimaryKeyConstraint, Text, func
from sqlalchemy.orm import Mapped, mapped_column

from liz.db.tables import Base
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
    # "replying": the reply's tweets are planned in TwitterOutbox and not all on X yet.
    decision: Mapped[str] = mapped_column(Text)
    handled_at: Mapped[datetime] = mapped_column(
        "handledAt", UTCDateTime(), server_default=func.current_timestamp()
    )


class OutboxTweetRecord(Base):
    """One tweet of a thread the bot means to post, and what became of it."""

    __tablename__ = "TwitterOutbox"
    __table_args__ = (
        PrimaryKeyConstraint("accountId", "threadKey", "position"),
        Index(None, "accountId", "state"),
    )

    account_id: Mapped[str] = mapped_column("accountId", Text)
    # "reply:<tweet id>" for a reply, "post:<uuid>" for a scheduled post.
    thread_key: Mapped[str] = mapped_column("threadKey", Text)
    position: Mapped[int] = mapped_column(Integer)  # 0 is the thread's first tweet
    text: Mapped[str] = mapped_column(Text)
    # The tweet the thread's first tweet answers; later tweets answer the one before.
    reply_to: Mapped[str | None] = mapped_column("replyTo", Text)
    # "planned" (not known to be on X yet), "posted", or "dropped" (X refused an earlier
    # tweet of the thread for good, so the thread ends before this one).
    state: Mapped[str] = mapped_column(Text)
    # When the last post call for this tweet began; set while "planned", the call's
    # outcome is unknown and X is searched before posting again.
    attempted_at: Mapped[datetime | None] = mapped_column("attemptedAt", UTCDateTime())
    # The tweet X made of it; None while "posted" means X refused a second call as a
    # duplicate (so it is out) and has not shown which tweet it is yet.
    tweet_id: Mapped[str | None] = mapped_column("tweetId", Text)
    created_at: Mapped[datetime] = mapped_column(
        "createdAt", UTCDateTime(), server_default=func.current_timestamp()
    )
