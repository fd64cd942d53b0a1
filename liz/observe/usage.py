"""Token usage as it happens: each LLM call's ``usage``, kept on the unit of work that made it.

A turn (``AgentFramework.process``) or a learning job opens :func:`metering`; every LLM
call made while it is open, by its task or one it started (a shared query embedding),
adds a :class:`CallUsage`. Work that opens a meter of its own (learning) counts there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CallUsage:
    """One LLM call's tokens, as the provider reported them."""

    operation: str  # chat or embeddings
    model: str
    purpose: str  # reply, route, extract, reconcile, embed, ...
    input_tokens: int  # every input token, the cached ones included
    output_tokens: int
    cached_input_tokens: int = 0  # read from the provider's prompt cache
    cache_write_tokens: int = 0  # written to it (Anthropic's cache_control, via OpenRouter)


@dataclass
class UsageMeter:
    """The calls of one unit of work."""

    calls: list[CallUsage] = field(default_factory=list)
    stored: int = 0  # the calls before this one are in the usage table already
    agent_id: str | None = None  # whose work it is (the per-agent metrics)
    _open: bool = field(default=False, repr=False)

    @property
    def input_tokens(self) -> int:
        return sum(call.input_tokens for call in self.calls)

    @property
    def cached_input_tokens(self) -> int:
        return sum(call.cached_input_tokens for call in self.calls)

    @property
    def output_tokens(self) -> int:
        return sum(call.output_tokens for call in self.calls)

    def unstored(self) -> list[CallUsage]:
        """The calls not yet in the usage table."""
        return self.calls[self.stored :]


_current: ContextVar[UsageMeter | None] = ContextVar("liz_usage", default=None)


@contextmanager
def metering(
    meter: UsageMeter | None = None, *, agent_id: str | None = None
) -> Iterator[UsageMeter]:
    """While the block runs, the LLM calls made in its context (for ``agent_id``'s work)
    are added to the meter."""
    meter = meter or UsageMeter()
    meter.agent_id = agent_id or meter.agent_id
    meter._open = True
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)
        meter._open = False


def record_usage(call: CallUsage) -> None:
    meter = _current.get()
    if meter is not None and meter._open:
        meter.calls.append(call)


def metered_agent() -> str | None:
    """The agent whose unit of work the LLM calls made here belong to, if one is metered."""
    meter = _current.get()
    return meter.agent_id if meter is not None and meter._open else None
