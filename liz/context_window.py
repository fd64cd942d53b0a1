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
from functools import lru_cache
from itertools import accumulate

from liz.conversation import CACHED_LINES, line, line_tokens
from liz.types import Memory

REACH = 0.25  # of the window: how far around an anchor no other hash may be higher


def conversation_window(memories: Sequence[Memory], budget: int, limit: int) -> list[Memory]:
    """The newest of ``memories`` (newest first, the ``limit`` newest stored) a prompt shows.

    At most ``budget`` estimated tokens and ``limit`` messages; ``budget`` 0: all of them
    (Liz's rule, the last ``limit`` messages). The newest message is kept even when it
    alone is longer than the budget: it is what the user's new message answers.
    """
    if budget == 0:
        return list(memories)
    fits = _fitting(memories, budget)
    whole = len(memories) < limit  # the conversation's first message was read
    if whole and len(fits) == len(memories):
        return fits  # the whole conversation fits: it only grows
    # Each message's share of a full window, by tokens or by count, whichever is more.
    weights = [max(line_tokens(memory) / budget, 1 / limit) for memory in memories]
    ranks = [_rank(line(memory)) for memory in memories]
    ends = list(accumulate(weights))  # newest first: the share up to and with each message
    for index in reversed(range(len(fits))):  # the oldest that fits first
        if _is_anchor(index, weights, ends, ranks, whole):
            return fits[: index + 1]
    older_half = [index for index in range(len(fits)) if ends[index] > 0.5]
    if not older_half:
        return fits
    first = max(older_half, key=lambda index: (ranks[index], index))
    return fits[: first + 1]


def _fitting(memories: Sequence[Memory], budget: int) -> list[Memory]:
    """The newest memories whose lines fit in ``budget`` (at least the newest one)."""
    fits: list[Memory] = []
    used = 0
    for memory in memories:
        used += line_tokens(memory)
        if used > budget and fits:
            break
        fits.append(memory)
    return fits


def _is_anchor(
    index: int, weights: list[float], ends: list[float], ranks: list[bytes], whole: bool
) -> bool:
    """Whether the message at ``index`` has the highest hash within REACH around it, and
    every message within REACH is known (said already, and read)."""
    starts_at = ends[index] - weights[index]  # the share said after it
    if starts_at < REACH:
        return False  # messages still to come may have a higher hash
    if not whole and ends[-1] - ends[index] < REACH:
        return False  # older messages within reach were not read
    newer = index - 1
    while newer >= 0 and starts_at - (ends[newer] - weights[newer]) <= REACH:
        if ranks[newer] >= ranks[index]:
            return False
        newer -= 1
    older = index + 1
    while older < len(ranks) and (ends[older] - weights[older]) - starts_at <= REACH:
        if ranks[older] >= ranks[index]:
            return False
        older += 1
    return True


@lru_cache(maxsize=CACHED_LINES)
def _rank(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=8).digest()
