"""Find the app a command runs: ``MODULE:ATTRIBUTE`` as uvicorn names apps, or a ``.py`` path.

``myapp:app``, ``myapp`` (attribute ``app``), ``src/myapp.py`` or ``src/myapp.py:app``.
The attribute is an :class:`liz.App`, or a function without arguments returning one.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from liz.app import App, default_app
from liz.errors import UsageError, syntax_error_line

DEFAULT_ATTRIBUTE = "app"


def load_app(target: str | None, *, agents_dir: str | Path | None = None) -> App:
    """The app ``target`` names; without one, the agents of ``agents_dir`` (or the bundled)."""
    if target is None:
        return default_app(agents_dir)
    if agents_dir is not None:
        raise UsageError("give either an app (MODULE:ATTRIBUTE) or --agents DIR, not both")
    where, _, attribute = target.partition(":")
    module = _import(where, target)
    found = getattr(module, attribute or DEFAULT_ATTRIBUTE, None)
    if found is None:
        raise UsageError(
            f"{target!r}: {where!r} has no attribute {attribute or DEFAULT_ATTRIBUTE!r}; "
            "name the App as MODULE:ATTRIBUTE, e.g. myapp:app"
        )
    if not isinstance(found, App) and callable(found):
        found = found()
    if not isinstance(found, App):
        raise UsageError(f"{target!r} is a {type(found).__name__}, not a liz.App")
    return found


def _import(where: str, target: str) -> object:
    # As uvicorn does: the working directory comes first, so the user's modules win.
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    if where.endswith(".py"):
        return _import_file(Path(where), target)
    try:
        return importlib.import_module(where)
    except SyntaxError as exc:  # the user's code: its file and line, not our frames
        raise UsageError(syntax_error_line(exc)) from None
    except ModuleNotFoundError as exc:
        if exc.name is not None and where.startswith(exc.name):
            raise UsageError(
                f"{target!r}: no module {where!r} here ({Path.cwd()}); run from the folder "
                "that holds it, or give the path of its .py file"
            ) from None
        raise


def _import_file(path: Path, target: str) -> object:
    if not path.is_file():
        raise UsageError(f"{target!r}: no file {str(path)!r}")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # so the file imports its neighbours
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{target!r}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise UsageError(syntax_error_line(exc)) from None
    return module
