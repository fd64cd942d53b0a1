"""Every ``>>>`` example in liz's docstrings runs, and prints what it shows."""

from __future__ import annotations

import doctest
import importlib
import os
from pathlib import Path

import pytest

import liz

PACKAGE = Path(liz.__file__).parent


def modules_with_examples() -> list[str]:
    found = []
    for folder, _, files in os.walk(PACKAGE, followlinks=True):  # liz.middleware, liz.agents
        for file in files:
            path = Path(folder) / file
            if file.endswith(".py") and ">>> " in path.read_text(encoding="utf-8"):
                parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
                found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(found)


@pytest.mark.parametrize("name", modules_with_examples())
def test_the_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=report.append)
    assert runner.tries, f"{name} has '>>> ' lines that are no doctest"
    assert not runner.failures, "".join(report)
