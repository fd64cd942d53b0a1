"""Token counts for prompt budgets, estimated offline from the text's UTF-8 size.

An exact count needs the model's own vocabulary. ``tiktoken`` downloads OpenAI's at
first use, which fails offline. Packages that ship one inside the wheel are large in
memory or slow, and exact for OpenAI's models only, while liz also talks to OpenRouter
and local models whose tokenizers differ. A budget needs a cheap count that is about
right for all of them, so liz estimates: somewhat high on English chat and Cyrillic,
about right on Chinese, Japanese and emoji, low on code.
"""

from __future__ import annotations

import math

BYTES_PER_TOKEN = 4  # OpenAI's tokenizers: about 4 bytes of English per token


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` takes: its UTF-8 bytes divided by 4, rounded up.

    >>> estimate_tokens("Hello there")  # 11 bytes
    3
    """
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)
