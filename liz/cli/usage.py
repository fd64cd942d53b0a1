"""``liz usage``: the LLM tokens and what they cost, per agent, user, day or model.

For example::

    $ liz usage                      # per agent, every day so far
    $ liz usage --by day --since 2026-12-01
    $ liz usage --by user --agent business-advisor

Prices come from genai-prices, or LIZ_PRICE_TABLE over it (docs/observability.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from liz.cli.failing import fail
from liz.cli.session import with_session

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from liz.observe.usage_report import UsageLine


def show_usage(
    by: Annotated[str, typer.Option(help="Group by agent, user, day or model.")] = "agent",
    agent: Annotated[str | None, typer.Option(help="Only this agent id.")] = None,
    user: Annotated[str | None, typer.Option(help="Only this user id.")] = None,
    since: Annotated[str | None, typer.Option(help="From this day (YYYY-MM-DD).")] = None,
    until: Annotated[str | None, typer.Option(help="To this day, inclusive.")] = None,
) -> None:
    """Print tokens (input, the part of it the prompt cache served, output) and cost per
    agent, user, day or model."""
    from liz.config import Settings
    from liz.config.loading import load_settings
    from liz.errors import LizError
    from liz.observe.prices import PriceTable
    from liz.observe.usage_report import check_filters, usage_report

    try:
        check_filters(by, since, until)
        prices = PriceTable.load(load_settings(Settings).liz_price_table)
    except LizError as exc:
        fail(str(exc))

    async def read(session: AsyncSession) -> list[UsageLine]:
        return await usage_report(
            session, prices, by, agent_id=agent, user_id=user, since=since, until=until
        )

    lines = with_session(read, reading="the usage table")
    if not lines:
        typer.echo("no usage recorded yet")
        return
    typer.echo(
        f"{by:<30} {'calls':>7} {'input':>10} {'cached':>10} {'cache %':>7} "
        f"{'output':>10} {'cost USD':>11}"
    )
    for line in lines:
        note = f"  (no price: {', '.join(line.unpriced_models)})" if line.unpriced_models else ""
        typer.echo(
            f"{line.key:<30} {line.calls:>7} {line.input_tokens:>10} "
            f"{line.cached_input_tokens:>10} {line.cache_share * 100:>7.1f} "
            f"{line.output_tokens:>10} {line.cost:>11.4f}{note}"
        )
