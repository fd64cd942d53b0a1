"""docs/tools.md's Python examples run as written, one after the other."""

from __future__ import annotations

import re
from pathlib import Path

from liz.agent import BaseAgent

PAGE = Path(__file__).parent.parent / "docs" / "tools.md"


def test_the_tools_pages_examples_run_and_declare_what_they_say() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    assert len(blocks) >= 4
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)
    shop = namespace["shop"]
    assert isinstance(shop, BaseAgent)
    assert {"order_status", "opening_hours", "refund"} <= set(shop.tools)
    assert shop.tools["refund"].requires_approval
    assert [server.name for server in shop.mcp_servers] == ["files", "crm"]
    assert [route.name for route in shop.get_routes()] == ["conversation", "support"]
