"""A griffe extension for the API reference: liz.middleware and liz.agents are read from
the repository's middleware/ and agents/, which setup.py installs under those names;
griffe reads a package from its folder, so it would not find them inside liz/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import griffe

ROOT = Path(__file__).parent.parent.parent
MAPPED = ("middleware", "agents")  # liz.<name> is installed from the folder <name>/


class MappedPackages(griffe.Extension):
    # Once liz/__init__.py is read and before liz's folders are, so `::: liz.middleware`
    # finds its member.
    def on_module_members(
        self, *, mod: griffe.Module, agent: griffe.Visitor | griffe.Inspector, **kwargs: Any
    ) -> None:
        if mod.path != "liz":
            return
        for name in MAPPED:
            module = griffe.load(
                name,
                search_paths=[ROOT],
                extensions=agent.extensions,
                docstring_parser=agent.docstring_parser,
                docstring_options=agent.docstring_options,
                lines_collection=agent.lines_collection,
            )
            assert isinstance(module, griffe.Module)
            mod.set_member(name, module)
