"""What the learning worker passes between its steps: messages and claimed jobs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from liz.learning_queue.jobs import Job

ChatMessages = list[dict[str, str]]


@dataclass(frozen=True)
class Said:
    """A message to learn from after its reply, with how hard to try."""

    memory_id: str
    exchange: ChatMessages
    attempts: int
    wait_seconds: float
    # When its reply came: the burst waits for the user to be quiet from the newest on.
    at: datetime
    # The latest it waits for a lull in this process's turns.
    defer_until: datetime


@dataclass(frozen=True)
class Claimed:
    """A job this worker holds, with the exchange it learns from."""

    job: Job
    exchange: ChatMessages


# Claimed jobs of one user, oldest first: learned in one round.
Work = list[Claimed]


class AlreadyLearned(Exception):
    """Another worker learned this message first; the facts just written are rolled back."""


def jobs_of(work: Work) -> list[Job]:
    return [item.job for item in work]


def messages(claimed: Sequence[Job]) -> str:
    return "message " + ", ".join(job.memory_id for job in claimed)
