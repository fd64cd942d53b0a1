"""Which earlier messages a prompt shows: a window that moves in steps, not a message a turn.

A provider's prompt cache serves what a prompt repeats of an earlier one, from its first
token on. The previous conversation follows the character, so as long as its oldest
shown message stays the same, each turn's prompt repeats the last one's up to the new
messages. A window that drops one old message per turn would change that start on every
turn, and the cache would stop at the character. So the window keeps its first message
while the conversation fits the budget; once it does not, it starts at an anchor.

Anchors are messages picked by a hash of their line: a message is one when its hash is
the highest of every message within a quarter of the budget before and after it. So
anchors lie at least a quarter of the budget apart, about half of it on average, and
whether a message is one depends only on the stored messages around it: every process
finds the same ones, and a message stays an anchor (or not) once a quarter of the budget
has been said after it. The window starts at the oldest anchor that fits, keeps it turn
after turn until the conversation pushes it out, then moves in one step to the next one.
Where no anchor fits (one long message), it starts at the message of its older half with
the highest hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from liz.prompts.conversation import CACHED_LINES, line
from liz.prompts.tokens import estimate_tokens
from liz.types import Memory

REACH = 0.25  # of the window: how far around an anchor no other hash may be higher


def conversation_window(memories: Sequence[Memory], budget: int, limit: int) -> list[Memory]:
    """The newest of ``memories`` (newest first, the ``limit`` newest stored) a prompt shows.

    At most ``budget`` estimated tokens and ``limit`` messages; ``budget`` 0: all of them
    (Liz's rule, the last ``limit`` messages). The newest message is kept even when it
    alone is longer than the budget: it is what the user's new message answers.
    """
    if budget == 0 or not memories:
        return list(memories)
    read = _Read(memories, budget, limit)
    fits = read.fitting()
    if read.whole and fits == len(memories):
        return list(memories)  # the whole conversation fits: it only grows
    for index in reversed(range(fits)):  # the oldest that fits first
        if read.is_anchor(index):
            return list(memories[: index + 1])
    older_half = [index for index in range(fits) if read.end(index) > 0.5]
    if not older_half:
        return list(memories[:fits])
    first = max(older_half, key=lambda index: (read.rank(index), index))
    return list(memories[: first + 1])


@dataclass
class _Read:
    """The memories read (newest first), measured only as far as the window needs."""

    memories: Sequence[Memory]
    budget: int
    limit: int
    # Added up from the newest, for messages 0 to i: their tokens, and their share of a
    # full window (each message's by tokens or by count, whichever is more).
    token_ends: list[int] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    ranks: list[bytes] = field(default_factory=list)

    @property
    def whole(self) -> bool:
        """Whether the conversation's first message was read."""
        return len(self.memories) < self.limit

    def fitting(self) -> int:
        """How many of the newest fit in the budget (at least one)."""
        count = 1
        while count < len(self.memories) and self.tokens(count) <= self.budget:
            count += 1
        return count

    def _measure_to(self, index: int) -> None:
        while len(self.ends) <= index:
            tokens, rank = _measure(line(self.memories[len(self.ends)]))
            weight = max(tokens / self.budget, 1 / self.limit)
            self.token_ends.append((self.token_ends[-1] if self.token_ends else 0) + tokens)
            self.ends.append((self.ends[-1] if self.ends else 0.0) + weight)
            self.ranks.append(rank)

    def tokens(self, index: int) -> int:
        if index >= len(self.ends):
            self._measure_to(index)
        return self.token_ends[index]

    def end(self, index: int) -> float:
        if index >= len(self.ends):
            self._measure_to(index)
        return self.ends[index]

    def start(self, index: int) -> float:
        """The share said after message ``index``."""
        return self.end(index - 1) if index else 0.0

    def rank(self, index: int) -> bytes:
        if index >= len(self.ends):
            self._measure_to(index)
        return self.ranks[index]

    def is_anchor(self, index: int) -> bool:
        """Whether message ``index`` has the highest hash within REACH around it, and
        every message within REACH is known (said already, and read)."""
        at = self.start(index)
        if at < REACH:
            return False  # messages still to come may have a higher hash
        mine = self.rank(index)
        newer = index - 1
        while newer >= 0 and at - self.start(newer) <= REACH:
            if self.ranks[newer] >= mine:
                return False
            newer -= 1
        older = index + 1
        while older < len(self.memories) and self.start(older) - at <= REACH:
            if self.rank(older) >= mine:
                return False
            older += 1
        # Ran out of read messages within reach: older ones, unread, might outrank it.
        return older < len(self.memories) or self.whole


@lru_cache(maxsize=CACHED_LINES)
def _measure(text: str) -> tuple[int, bytes]:
    """A conversation line's estimated tokens, and its hash."""
    return estimate_tokens(text), hashlib.blake2b(text.encode(), digest_size=8).digest()
