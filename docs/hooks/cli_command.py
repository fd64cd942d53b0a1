"""Hand mkdocs-click the `liz` command as click sees it: Typer builds that object on demand."""

from __future__ import annotations

import sys
import types

import typer

from liz.cli import app

module = types.ModuleType("liz_click_command")
module.command = typer.main.get_command(app)
sys.modules[module.__name__] = module
