"""How many of a chat request's prompt tokens an OpenAI-style prefix cache would serve.

OpenAI caches prompts by their start: a request is served from the cache for the
longest prefix it shares with an earlier request to the same model, in steps of
:data:`BLOCK_TOKENS`, once that prefix reaches :data:`MIN_CACHED_TOKENS`
(``usage.prompt_tokens_details.cached_tokens``). ScriptedOpenAI reports the same, so
tests and benches see what a layout of the prompt would save.

What is compared is the prompt as the provider reads it (:func:`rendered_prompt`): the
tool definitions and the answer's schema first, as OpenAI puts them ahead of the
messages, then each message's role and text in order.

Tokens are counted as liz budgets them (:mod:`liz.prompts.tokens`), by bytes of UTF-8,
rounded up, so the cached tokens never exceed the prompt's. A model's own vocabulary
cannot be used here: ``tiktoken`` downloads it at first use, which fails offline, and
liz talks to models with other tokenizers too.

Example::

    cache = PrefixCache()
    cache.cached_tokens("gpt-x", body)  # 0: nothing was sent before
    cache.cached_tokens("gpt-x", body)  # the whole prompt, in whole blocks
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from typing import Any

from liz.prompts.tokens import BYTES_PER_TOKEN, estimate_tokens

BLOCK_TOKENS = 128  # the cache serves prefixes in steps of this many tokens...
MIN_CACHED_TOKENS = 1024  # ...from this many on
BLOCK_BYTES = BLOCK_TOKENS * BYTES_PER_TOKEN


def rendered_prompt(body: Mapping[str, Any]) -> str:
    """A chat request's prompt as the provider reads it: tools and schema, then messages."""
    parts = [f"tool: {_json(tool)}\n" for tool in body.get("tools") or []]
    if body.get("response_format") is not None:
        parts.append(f"response format: {_json(body['response_format'])}\n")
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        parts.append(f"{message.get('role')}: {_text(message.get('content'))}\n")
        if message.get("tool_calls"):
            parts.append(f"calls: {_json(message['tool_calls'])}\n")
        if message.get("tool_call_id"):
            parts.append(f"call id: {message['tool_call_id']}\n")
    return "".join(parts)


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """The request's prompt tokens as ScriptedOpenAI reports them."""
    return estimate_tokens(rendered_prompt(body))


class PrefixCache:
    """The prefixes earlier requests sent, per model, in whole blocks.

    Each block is known by a hash of the prompt from its start to the block's end, so a
    block found means the whole prefix up to it was sent before. Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, set[bytes]] = {}

    def cached_tokens(self, model: str, body: Mapping[str, Any]) -> int:
        """What the cache serves of ``body``'s prompt, then remember that prompt."""
        prefixes = _block_prefixes(rendered_prompt(body).encode())
        with self._lock:
            seen = self._seen.setdefault(model, set())
            shared = 0
            for prefix in prefixes:
                if prefix not in seen:
                    break
                shared += 1
            seen.update(prefixes)
        tokens = shared * BLOCK_TOKENS
        return tokens if tokens >= MIN_CACHED_TOKENS else 0


def _block_prefixes(prompt: bytes) -> list[bytes]:
    """A hash of the prompt up to the end of each of its whole blocks, in order."""
    running = hashlib.blake2b(digest_size=16)
    hashes = []
    for end in range(BLOCK_BYTES, len(prompt) + 1, BLOCK_BYTES):
        running.update(prompt[end - BLOCK_BYTES : end])
        hashes.append(running.copy().digest())
    return hashes


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text")) if part.get("type") == "text" else _json(part)
            for part in content
            if isinstance(part, dict)
        )
    return ""


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)
