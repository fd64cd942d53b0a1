"""Reading an embeddings answer's JSON, checked, into one vector per text asked for.

The SDK's own reading built a pydantic object per vector and checked nothing: an
answer without ``data`` failed as a ``TypeError``, and a number where a vector should
be, or base64 that decodes to nothing, went on as a vector (and was stored with a
fact). Here every way an answer can be broken is an :class:`LLMOutputError` naming
it, and the vectors come straight from the JSON: a list of numbers, or base64 of
little-endian float32 numbers (``encoding_format="base64"``), decoded by numpy.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from liz.llm.errors import LLMOutputError

Vector = npt.NDArray[np.float32] | npt.NDArray[np.float64]


@dataclass(frozen=True)
class EmbeddingsAnswer:
    """The vectors, the model that made them and the tokens it counted."""

    vectors: list[Vector]
    model: str
    input_tokens: int


def read_embeddings(content: bytes, *, model: str, count: int) -> list[Vector]:
    """The ``count`` vectors of an embeddings answer, in the order of the texts sent
    (each item's ``index``; the items' order when none has one)."""
    return read_embeddings_answer(content, model=model, count=count).vectors


def read_embeddings_answer(content: bytes, *, model: str, count: int) -> EmbeddingsAnswer:
    """The answer's vectors (as :func:`read_embeddings`), with its model and usage."""
    shown = content[:300].decode("utf-8", "replace")
    try:
        answer = json.loads(content)
    except ValueError:
        raise LLMOutputError(
            f"the embedding model {model} answered with something that is not JSON: {shown!r}; "
            "check that OPENAI_BASE_URL is an OpenAI-compatible endpoint",
            output=shown,
        ) from None
    items = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise LLMOutputError(
            f"the embedding model {model} answered without a 'data' list of embeddings: {shown!r}",
            output=shown,
        )
    if len(items) != count:
        raise LLMOutputError(
            f"the embedding model {model} returned {len(items)} vectors for {count} texts",
            output=shown,
        )
    vectors: list[Vector | None] = [None] * count
    for position, item in enumerate(items):
        index = item.get("index", position) if isinstance(item, dict) else position
        if not isinstance(index, int) or not 0 <= index < count or vectors[index] is not None:
            raise LLMOutputError(
                f"the embedding model {model} numbered its vectors wrong: item {position} has "
                f"index {index!r}, for {count} texts",
                output=shown,
            )
        embedding = item.get("embedding") if isinstance(item, dict) else None
        vectors[index] = _vector(embedding, model=model, index=index, shown=shown)
    found = [vector for vector in vectors if vector is not None]
    sizes = sorted({vector.size for vector in found})
    if len(sizes) > 1:
        raise LLMOutputError(
            f"the embedding model {model} returned vectors of different lengths "
            f"({', '.join(map(str, sizes))}) in one answer",
            output=shown,
        )
    usage = answer.get("usage")
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    answered_by = answer.get("model")
    return EmbeddingsAnswer(
        found,
        answered_by if isinstance(answered_by, str) and answered_by else model,
        tokens if isinstance(tokens, int) else 0,
    )


def _vector(embedding: Any, *, model: str, index: int, shown: str) -> Vector:
    vector: Vector | None = None
    if isinstance(embedding, str):
        try:
            raw = base64.b64decode(embedding, validate=True)
        except binascii.Error:
            raw = b""
        if raw and len(raw) % 4 == 0:
            vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    elif isinstance(embedding, list) and all(
        isinstance(number, int | float) and not isinstance(number, bool) for number in embedding
    ):
        vector = np.asarray(embedding, dtype=np.float64)
    if vector is None or vector.size == 0:
        raise LLMOutputError(
            f"the embedding model {model} returned no usable vector for text {index}: expected "
            "a non-empty list of numbers or base64 of float32 numbers",
            output=shown,
        )
    if not np.isfinite(vector).all():
        raise LLMOutputError(
            f"the embedding model {model} returned a vector holding NaN or infinity for text "
            f"{index}",
            output=shown,
        )
    return vector
