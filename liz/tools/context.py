"""What a tool may receive about the turn that called it; the model never sees it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from liz.pipeline import Agent
    from liz.runtime.services import Runtime
    from liz.runtime.turn_trace import Trace


@dataclass(frozen=True)
class ToolContext:
    """The turn a tool runs in. Type a tool's first parameter as ``ToolContext`` to get it.

    >>> from liz import BaseAgent, Character
    >>> agent = BaseAgent(Character(agent_id="shop", name="Shop", system="You sell."))
    >>> @agent.tool
    ... async def my_orders(ctx: ToolContext) -> list[str]:
    ...     \"\"\"The orders of the user asking.\"\"\"
    ...     return [f"A1 of {ctx.user_id}"]
    >>> "my_orders" in agent.tools
    True
    """

    runtime: Runtime
    agent: Agent
    user_id: str
    room_id: str
    trace: Trace
