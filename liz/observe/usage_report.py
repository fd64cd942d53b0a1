"""Usage as ``liz usage`` and ``GET /usage`` show it: tokens and cost per agent, user or day."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import get_args

from sqlalchemy.ext.asyncio import AsyncSession

from liz.db.usage import GroupBy, UsageTotal, usage_totals
from liz.errors import InputError
from liz.observe.prices import PriceTable

GROUPS: tuple[str, ...] = get_args(GroupBy)
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass
class UsageLine:
    """One agent's, user's, day's or model's totals; ``cost`` leaves out unpriced models."""

    key: str
    calls: int = 0
    input_tokens: int = 0  # every input token, the cached ones included
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    unpriced_models: list[str] = field(default_factory=list)

    @property
    def cache_share(self) -> float:
        """The part of the input tokens the providers' prompt caches served."""
        return self.cached_input_tokens / self.input_tokens if self.input_tokens else 0.0


def check_filters(by: str, since: str | None, until: str | None) -> GroupBy:
    """The grouping, once the filters are known good; an ``InputError`` says what is wrong."""
    if by not in GROUPS:
        raise InputError(f"by={by!r} is unknown; group by one of: {', '.join(GROUPS)}")
    for name, value in (("since", since), ("until", until)):
        if value is not None and not _DAY.fullmatch(value):
            raise InputError(f"{name}={value!r} is not a day; write it as YYYY-MM-DD")
    return by  # type: ignore[return-value]


async def usage_report(
    session: AsyncSession,
    prices: PriceTable,
    by: str = "agent",
    *,
    agent_id: str | None = None,
    user_id: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> list[UsageLine]:
    group = check_filters(by, since, until)
    totals = await usage_totals(
        session, group, agent_id=agent_id, user_id=user_id, since=since, until=until
    )
    return priced(totals, prices)


def priced(totals: Iterable[UsageTotal], prices: PriceTable) -> list[UsageLine]:
    """The totals of each key, its models' tokens added up and priced."""
    lines: dict[str, UsageLine] = {}
    for total in totals:
        line = lines.setdefault(total.key, UsageLine(total.key))
        line.calls += total.calls
        line.input_tokens += total.input_tokens
        line.cached_input_tokens += total.cached_input_tokens
        line.output_tokens += total.output_tokens
        cost = prices.cost(
            total.model,
            total.input_tokens,
            total.output_tokens,
            total.cached_input_tokens,
            total.cache_write_tokens,
        )
        if cost is None:
            line.unpriced_models.append(total.model)
        else:
            line.cost += cost
    return list(lines.values())
