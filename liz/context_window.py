"""Which earlier messages a prompt shows: a window that moves in steps, not a message a turn.

A provider's prompt cache serves what a prompt repeats of an earlier one, from its first
token on. The previous conversation follows the character, so as long as its oldest
shown message stays the same, each turn's prompt repeats the last one's up to the new
messages. A window that drops one old message per turn would change that start on every
turn, and the cache would stop at the character. So the window keeps its first message
while the conversation fits the budget, and once it does not, moves in one step to a
message of its older half (what the newest messages leave of the budget's second half).

Which one: the message of the older half whose line has the highest hash. That depends
only on the stored messages, so every process shows the same window; and it stays put
from one turn to the next until that message leaves the older half, or a message with a
higher hash enters it, every few turns on average. Afterwards the window holds between
half and all of the budget.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from liz.conversation import line, line_tokens
from liz.types import Memory


def conversation_window(memories: Sequence[Memory], budget: int, limit: int) -> list[Memory]:
    """The newest of ``memories`` (newest first, the ``limit`` newest stored) a prompt shows.

    At most ``budget`` estimated tokens and ``limit`` messages; ``budget`` 0: all of them
    (Liz's rule, the last ``limit`` messages). The newest message is kept even when it
    alone is longer than the budget: it is what the user's new message answers.
    """
    if budget == 0:
        return list(memories)
    fits: list[Memory] = []
    filled: list[float] = []  # how full the window would be from each message on
    used = 0
    for memory in memories:
        used += line_tokens(memory)
        if used > budget and fits:
            break
        fits.append(memory)
        filled.append(max(used / budget, len(fits) / limit))
    else:
        if len(memories) < limit:
            return fits  # the whole conversation fits: it only grows
    older_half = [index for index, full in enumerate(filled) if full > 0.5]
    if not older_half:
        return fits
    # Highest hash, and the oldest of equal ones (the same line twice).
    first = max(older_half, key=lambda index: (_rank(fits[index]), index))
    return fits[: first + 1]


def _rank(memory: Memory) -> bytes:
    return hashlib.blake2b(line(memory).encode(), digest_size=8).digest()
