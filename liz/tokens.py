"""Token counts for prompt budgets, estimated offline from UTF-8 bytes.

An exact count needs the model's own tokenizer: OpenAI's vocabularies are downloads
(``tiktoken`` fetches them at first use, which fails offline), and the models behind
OpenRouter or a local server each split text their own way. A budget needs a count
that is cheap (no vocabulary in memory, about a microsecond a message) and the
same for every model, so liz estimates: one token per 4 bytes of UTF-8. Against
OpenAI's o200k count (GPT-4o) that is about 15% high for English chat, 10-35% high
for German, Japanese, Greek and Russian, about 10% low for Norwegian and Chinese
and up to 30% low for code. ``bench/context.py`` prints both counts side by side.
"""

from __future__ import annotations

from collections.abc import Sequence

from liz.types import Memory

BYTES_PER_TOKEN = 4
# What a message's line costs besides its text, "User ada (2025-01-02 03:04:05 UTC): "
# (digits are dense: 17 to 19 o200k tokens).
MESSAGE_OVERHEAD_TOKENS = 18


def estimate_tokens(text: str) -> int:
    """The tokens ``text`` takes, estimated: its UTF-8 bytes divided by 4, rounded up.

    >>> estimate_tokens("User's sister Mia lives in Oslo")
    8
    """
    return -(-len(text.encode("utf-8")) // BYTES_PER_TOKEN)


def newest_within_budget(memories: Sequence[Memory], budget: int) -> list[Memory]:
    """The newest of ``memories`` (given newest first) whose lines fit in ``budget`` tokens.

    The oldest go first; a budget of 0 keeps them all. Newest first, as given.
    """
    if budget <= 0:
        return list(memories)
    kept: list[Memory] = []
    used = 0
    for memory in memories:
        used += MESSAGE_OVERHEAD_TOKENS + estimate_tokens(memory.text)
        if used > budget:
            break
        kept.append(memory)
    return kept
