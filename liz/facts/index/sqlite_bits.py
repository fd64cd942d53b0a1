"""Sign bits of a scope's vectors, for the first pass of a search in a large scope.

Each vector's signs, one bit a dimension, packed into 64-bit words (1/32 of the
float32 size); two vectors differ in about as many bits as the angle between them
says. The words are stored word by word across rows (all rows' first words, then
all rows' second words, ...), so counting the bits a query differs in is a few
passes over long contiguous arrays: numpy summing 24 short words per row, row by
row, took twice the time.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from liz.facts.vectors import Vector, sign_bits

Words = npt.NDArray[np.uint64]


class SignBits:
    """Rows of sign bits, with room for ``capacity`` rows (see :meth:`grown`)."""

    def __init__(self, matrix: Vector, size: int, capacity: int) -> None:
        packed = sign_bits(matrix[:size])  # rows x words
        self._words: Words = np.zeros((packed.shape[1], capacity), dtype=np.uint64)
        self._words[:, :size] = packed.T

    @property
    def capacity(self) -> int:
        return int(self._words.shape[1])

    def grown(self, capacity: int) -> None:
        """Make room for ``capacity`` rows, keeping the rows there are."""
        words = np.zeros((self._words.shape[0], capacity), dtype=np.uint64)
        kept = min(capacity, self.capacity)
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
