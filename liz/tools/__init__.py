"""Tools: functions an agent's model may call, from Python or from MCP servers.

See docs/tools.md. Declare them with ``@agent.tool``; a route uses them through
:func:`liz.tools.turn.answer_with_tools` (the conversation route does by itself).
"""

from __future__ import annotations

from liz.tools.context import ToolContext
from liz.types import Tool

__all__ = ["Tool", "ToolContext"]
