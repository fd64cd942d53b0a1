"""Short integer ids for the LLM: it never sees, and so can never invent, a real id."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from liz.facts.domain import Fact


class ShortIds:
    """Numbers the facts shown to the LLM 1, 2, 3 ... and maps the numbers back.

    >>> shown = ShortIds([fact_a, fact_b])
    >>> shown.resolve(2) is fact_b
    True
    >>> shown.resolve(7) is None    # an id the LLM was never shown
    True
    """

    def __init__(self, facts: Iterable[Fact]) -> None:
        self._facts = list({fact.id: fact for fact in facts}.values())  # each fact once

    def numbered(self) -> Sequence[tuple[int, Fact]]:
        return list(enumerate(self._facts, start=1))

    def resolve(self, number: int | None) -> Fact | None:
        """The fact shown under ``number``, or None when no such number was shown."""
        if number is None or not 1 <= number <= len(self._facts):
            return None
        return self._facts[number - 1]
