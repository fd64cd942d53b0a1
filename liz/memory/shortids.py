"""Short integer ids for the LLM: it never sees, and so can never invent, a real id."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Generic, Protocol, TypeVar


class HasId(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=HasId)


class ShortIds(Generic[T]):
    """Numbers the items shown to the LLM 1, 2, 3 ... and maps the numbers back.

    >>> shown = ShortIds([fact_a, fact_b])
    >>> shown.resolve(2) is fact_b
    True
    >>> shown.resolve(7) is None    # an id the LLM was never shown
    True
    """

    def __init__(self, items: Iterable[T]) -> None:
        self._items: list[T] = []
        seen: set[str] = set()
        for item in items:
            if item.id not in seen:
                seen.add(item.id)
                self._items.append(item)

    def __len__(self) -> int:
        return len(self._items)

    def numbered(self) -> Sequence[tuple[int, T]]:
        return [(number, item) for number, item in enumerate(self._items, start=1)]

    def resolve(self, number: int | None) -> T | None:
        """The item shown under ``number``, or None when no such number was shown."""
        if number is None or not 1 <= number <= len(self._items):
            return None
        return self._items[number - 1]
