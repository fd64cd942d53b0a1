"""Embedding vectors as stored (float32, unit length: cosine similarity is a dot product),
and texts embedded alone or in groups that share one request."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from liz.errors import LLMError

if TYPE_CHECKING:
    from liz.llm import LLMClient

Vector = npt.NDArray[np.float32]
_CHUNK_ROWS = 8192
# Counting bits needs numpy 2's bitwise_count; without it, searches scan exactly.
HAS_BIT_COUNT = hasattr(np, "bitwise_count")


def as_unit_vector(values: Sequence[float] | Vector) -> Vector:
    """The vector scaled to length 1 (a zero vector stays zero: it matches nothing)."""
    vector = np.asarray(values, dtype=np.float32)
    if vector.ndim != 1 or vector.size == 0:
        raise LLMError(f"the embedding model returned a vector of shape {vector.shape}")
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def similarities_to(matrix: Vector, query: Vector) -> Vector:
    """Each row's dot product with ``query``, computed on this thread: ``matrix @ query``
    would hand it to BLAS threads that spin, taking the CPU the event loop needs."""
    if hasattr(np, "vecdot"):  # numpy >= 2.0
        return np.asarray(np.vecdot(matrix, query), dtype=np.float32)
    return np.asarray(np.einsum("ij,j->i", matrix, query), dtype=np.float32)


def sign_bits(matrix: Vector) -> npt.NDArray[np.uint64]:
    """Each row's signs, one bit a dimension (set where positive), packed into 64-bit
    words: 1/32 of the float32 size, compared by counting differing bits."""
    rows, dimension = matrix.shape
    words = -(-dimension // 64)
    packed = np.zeros((rows, words * 8), dtype=np.uint8)
    for start in range(0, rows, _CHUNK_ROWS):  # in chunks: no float-sized temporaries
        chunk = matrix[start : start + _CHUNK_ROWS]
        packed[start : start + len(chunk), : -(-dimension // 8)] = np.packbits(chunk > 0, axis=1)
    return packed.view(np.uint64)


def rounded(similarity: float) -> float:
    """Similarities compared at 6 decimals: float noise differs between numpy and pgvector."""
    return round(float(similarity), 6)


def for_storage(vector: Vector, dialect: str) -> Any:
    """What the ``embedding`` column takes: bytes on SQLite, the array for pgvector."""
    if dialect == "sqlite":
        return np.ascontiguousarray(vector, dtype="<f4").tobytes()
    return vector


async def embed(llm: LLMClient, texts: Sequence[str]) -> list[Vector]:
    """Unit-length embeddings of ``texts`` by the LLM's embedding model, as stored and compared."""
    return [as_unit_vector(vector) for vector in await llm.embed_float32(list(texts))]


# The endpoint refused the request for what it carried, not for who sent it or when.
_REFUSED_FOR_CONTENT = frozenset({400, 413, 422})

# Texts to embed together, and the future their vectors (or the request's error) go to.
Group = tuple[Sequence[str], "asyncio.Future[list[Vector]]"]


async def embed_groups(llm: LLMClient, groups: Sequence[Group]) -> None:
    """Embed every group's texts in one request and settle each group's future with its
    vectors, or with the error, as if it had sent the request itself. A request refused
    for what it carries (400, 413, 422) is sent again a group at a time: one group's
    texts never fail another's."""
    texts = [text for group, _ in groups for text in group]
    try:
        vectors = await embed(llm, texts) if texts else []
    except LLMError as error:
        if len(groups) > 1 and error.upstream_status in _REFUSED_FOR_CONTENT:
            await asyncio.gather(*(embed_groups(llm, [group]) for group in groups))
        else:
            _settle(groups, error)
        return
    except asyncio.CancelledError:  # the loop is closing: the askers end too
        for _, future in groups:
            future.cancel()
        raise
    except Exception as error:  # each asker raises it: none is left waiting
        _settle(groups, error)
        return
    start = 0
    for group, future in groups:
        if not future.done():
            future.set_result(vectors[start : start + len(group)])
        start += len(group)


def _settle(groups: Sequence[Group], error: Exception) -> None:
    for _, future in groups:
        if not future.done():
            future.set_exception(error)
