"""Errors of the facts memory, in liz's error tree."""

from __future__ import annotations

from liz.errors import LizError


class EmbeddingMismatchError(LizError):
    """Stored facts were embedded with another model or dimension than the query.

    Comparing vectors from two models gives meaningless similarities, so the
    search is refused; ``liz memory reindex`` re-embeds the scope.
    """

    status = 409
