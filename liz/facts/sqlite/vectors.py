"""One scope's active vectors as a float32 matrix, and their sign bits for large scopes.

A search is one matrix-vector product over the matrix. A scope of long vectors too
large to scan whole is first ranked by how many sign bits differ from the query's
(one bit a dimension, 1/32 of the size), and only the closest rows are scored.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

from liz.facts.domain import ModelPair
from liz.facts.vectors import HAS_BIT_COUNT, Vector, sign_bits, similarities_to

MIN_SPARE_ROWS = 64
# Scopes with up to this many numbers (facts x dimensions) are scanned exactly.
EXACT_SCAN_VALUES = 4_000_000
# Above it, this many times the rows asked for are scored exactly after the bit pass,
# for vectors of at least MIN_BIT_DIMENSIONS: shorter ones' signs say too little.
OVERSAMPLE = 20
MIN_BIT_DIMENSIONS = 1024
MIN_CANDIDATES = 1000
GATHER_ROWS = 64


class ScopeVectors:
    """One scope's active facts: ids, text hashes and unit vectors, row by row.

    Rows are in no meaningful order (rankings break ties by hash). An added fact
    takes a spare row; a removed one is overwritten by the last row. The matrix
    keeps a quarter of its size spare, so growing it copies rarely. Beside it, each
    row's sign bits (1/32 of its size), for the first pass of a search in a large scope.
    """

    def __init__(
        self, ids: list[str], hashes: list[str], matrix: Vector, bounds: tuple[ModelPair, ...]
    ) -> None:
        self.ids = ids
        self.hashes = hashes
        self.rows = {fact_id: row for row, fact_id in enumerate(ids)}
        self.bounds = bounds  # see liz.facts.queries.model_bounds
        self._storage = _with_spare(matrix, len(ids))
        # Sign bits only where a search uses them (see nearest).
        self._bits: SignBits | None = None
        if matrix.shape[1] >= MIN_BIT_DIMENSIONS and HAS_BIT_COUNT:
            self._bits = SignBits(matrix, len(ids), len(self._storage))

    @property
    def matrix(self) -> Vector:
        """One unit vector per row (a view: valid until the next change)."""
        return self._storage[: len(self.ids)]

    def nearest(self, query: Vector, count: int) -> tuple[npt.NDArray[np.intp], Vector]:
        """Rows holding the ``count`` highest similarities to ``query`` (more when
        cheaper, all of them in a small scope) and their similarities, in no order.

        A matrix of up to ``EXACT_SCAN_VALUES`` numbers, or of short vectors, is
        scanned whole. A larger one is first ranked by differing sign bits, and only
        the ``OVERSAMPLE`` x ``count`` closest rows are scored: the similarities are
        exact, the choice of rows is not guaranteed to be.
        """
        size = len(self.ids)
        candidates = max(count * OVERSAMPLE, MIN_CANDIDATES)
        if self._bits is None or size * query.size <= EXACT_SCAN_VALUES or size <= candidates:
            return np.arange(size), similarities_to(self.matrix, query)
        distances = self._bits.distances(query, size)
        rows = np.sort(np.argpartition(distances, candidates - 1)[:candidates])
        return rows, self._similarities_of(rows, query)

    def _similarities_of(self, rows: npt.NDArray[np.intp], query: Vector) -> Vector:
        # A block of rows at a time: a block copied out stays in the CPU's cache.
        found = np.empty(len(rows), dtype=np.float32)
        for start in range(0, len(rows), GATHER_ROWS):
            block = rows[start : start + GATHER_ROWS]
            found[start : start + len(block)] = similarities_to(self._storage[block], query)
        return found

    def add(self, fact_id: str, digest: str, vector: Vector) -> None:
        size = len(self.ids)
        if size == len(self._storage):
            self._storage = _with_spare(self._storage, size)
            if self._bits is not None:
                self._bits.grown(len(self._storage))
        self._storage[size] = vector
        if self._bits is not None:
            self._bits.set(size, vector)
        self.ids.append(fact_id)
        self.hashes.append(digest)
        self.rows[fact_id] = size

    def remove(self, fact_id: str) -> None:
        row = self.rows.pop(fact_id, None)
        if row is None:
            return
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            self._storage[row] = self._storage[last]
            if self._bits is not None:
                self._bits.move(last, row)
            self.ids[row] = moved
            self.hashes[row] = self.hashes[last]
            self.rows[moved] = row
        self.ids.pop()
        self.hashes.pop()


Stored = TypeVar("Stored", bound=np.generic)


def _with_spare(matrix: npt.NDArray[Stored], size: int) -> npt.NDArray[Stored]:
    """A copy of ``matrix``'s first ``size`` rows with room for a quarter more."""
    spare = np.empty((size + max(size // 4, MIN_SPARE_ROWS), matrix.shape[1]), dtype=matrix.dtype)
    spare[:size] = matrix[:size]
    return spare


Words = npt.NDArray[np.uint64]


class SignBits:
    """Rows of sign bits, with room for ``capacity`` rows (see :meth:`grown`)."""

    def __init__(self, matrix: Vector, size: int, capacity: int) -> None:
        packed = sign_bits(matrix[:size])  # rows x words
        self._words: Words = np.zeros((packed.shape[1], capacity), dtype=np.uint64)
        self._words[:, :size] = packed.T

    def grown(self, capacity: int) -> None:
        """Make room for ``capacity`` rows, keeping the rows there are."""
        words = np.zeros((self._words.shape[0], capacity), dtype=np.uint64)
        kept = min(capacity, self._words.shape[1])
        words[:, :kept] = self._words[:, :kept]
        self._words = words

    def set(self, row: int, vector: Vector) -> None:
        self._words[:, row] = sign_bits(vector[np.newaxis])[0]

    def move(self, source: int, target: int) -> None:
        self._words[:, target] = self._words[:, source]

    def distances(self, query: Vector, size: int) -> npt.NDArray[np.uint16]:
        """How many sign bits of each of the first ``size`` rows differ from ``query``'s."""
        query_words = sign_bits(query[np.newaxis])[0]
        total = np.zeros(size, dtype=np.uint16)
        differing = np.empty(size, dtype=np.uint64)
        counts = np.empty(size, dtype=np.uint8)
        for number, word in enumerate(query_words):
            np.bitwise_xor(self._words[number, :size], word, out=differing)
            np.bitwise_count(differing, out=counts)
            np.add(total, counts, out=total)
        return total
