"""The name liz is installed under on the package index (``liz`` there is another project's);
the import name and the command stay ``liz``."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "liz-agents"


def installed_version() -> str | None:
    """The installed version, or None when run from a source tree never installed."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return None
