"""docs/architecture.md names the code as it is: every path it gives exists, and its Layout
lists every top-level module and package of liz/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
PAGE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
PATH = re.compile(r"(?<![\w./-])(?:liz|middleware|agents)/[\w/]*(?:\.py)?")


def layout() -> dict[str, str]:
    """The Layout block's entries under liz/, each with its description."""
    block = PAGE.split("## Layout", 1)[1].split("```")[1]
    entries: dict[str, str] = {}
    name = None
    for line in block.splitlines():
        entry = re.match(r"  (\S+)\s*(.*)", line)
        if entry and not line.startswith("   "):
            name = entry[1]
            entries[name] = entry[2]
        elif name and line.startswith("   "):
            entries[name] += " " + line.strip()
        else:
            name = None
    return entries


def test_every_path_the_page_names_exists() -> None:
    named = set(PATH.findall(PAGE))
    assert len(named) > 40
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"


def test_the_layout_lists_every_top_level_module_and_package() -> None:
    listed = set(layout())
    present = {p.name for p in (ROOT / "liz").glob("*.py")}
    present |= {f"{p.name}/" for p in (ROOT / "liz").iterdir() if p.is_dir() and p.name[0] != "_"}
    present -= {"__main__.py"}
    assert listed == present, (
        f"not in the Layout: {sorted(present - listed)}; gone: {sorted(listed - present)}"
    )


def test_every_module_a_package_line_names_is_in_that_package() -> None:
    missing = [
        f"liz/{package}{module}"
        for package, says in layout().items()
        if package.endswith("/")
        # a name in brackets is a library's, as "(discord.py)"
        for module in re.findall(r"(?<![\w./(])(\w+\.py)\b", says)
        if not (ROOT / "liz" / package / module).exists()
    ]
    assert missing == [], f"the Layout names modules that are not there: {missing}"


def test_liz_keeps_ten_modules_at_most_at_its_top_and_no_links() -> None:
    top = sorted(p.name for p in (ROOT / "liz").glob("*.py"))
    assert len(top) <= 10, f"liz/ holds {len(top)} modules at its top: {top}"
    links = [str(p.relative_to(ROOT)) for p in (ROOT / "liz").rglob("*") if p.is_symlink()]
    assert links == [], f"links under liz/ (map the folder in setup.py instead): {links}"
