"""Keep a long-running process's startup objects out of the garbage collector's way.

``liz serve`` and the chat bots (``liz telegram run``, ``liz discord run``) load
modules, schemas, models, templates and clients once and keep them for the life of
the process; every full collection would walk them all again, a pause each time.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# New objects (those still alive) that start a pass of the garbage collector.
YOUNG_OBJECTS_PER_COLLECTION = 5_000


def freeze_startup_objects() -> None:
    """Keep what was built to start serving out of the garbage collector's way.

    Frozen, the objects alive now are never walked again. A turn leaves no reference
    cycles behind (its objects go as it ends), so a pass over the youngest generation
    finds little garbage, only the objects of the turns under way:
    :data:`YOUNG_OBJECTS_PER_COLLECTION` makes such passes rarer than Python's
    default of one every 700 new objects.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS_PER_COLLECTION, *gc.get_threshold()[1:])


@contextmanager
def startup_objects_frozen() -> Iterator[None]:
    """:func:`freeze_startup_objects` for the block; the collector as it was after it
    (the process may go on: tests, an embedding app)."""
    thresholds = gc.get_threshold()
    freeze_startup_objects()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
