"""What any exception means to the caller of a turn or a request, in liz's error tree."""

from __future__ import annotations

from liz.db.errors import storage_error_for
from liz.errors import InternalError, LizError


def as_liz_error(exc: BaseException) -> LizError:
    """Itself if it is a ``LizError``, a :class:`liz.errors.StorageError` when the
    database cannot be reached or written, otherwise an :class:`InternalError` whose
    details stay in the log.
    """
    if isinstance(exc, LizError):
        return exc
    storage = storage_error_for(exc)
    if storage is not None:
        return storage
    return InternalError(f"{type(exc).__name__}: {exc}")
