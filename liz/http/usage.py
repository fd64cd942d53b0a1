"""``GET /usage``: tokens and cost per agent, user, day or model, behind the API key.

Query: ``by`` (agent, user, day, model; default agent), ``agentId``, ``userId``,
``since`` and ``until`` (YYYY-MM-DD, inclusive).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from liz.http.bodies import UsageReport, json_response
from liz.observe.usage_report import usage_report


async def usage(request: Request) -> Response:
    runtime = request.app.state.framework.runtime
    query = request.query_params
    prices = runtime.budgets.prices  # LIZ_PRICE_TABLE over genai-prices, read once
    async with runtime.sessions() as session:
        lines = await usage_report(
            session,
            prices,
            query.get("by", "agent"),
            agent_id=query.get("agentId"),
            user_id=query.get("userId"),
            since=query.get("since"),
            until=query.get("until"),
        )
    return json_response(UsageReport(by=query.get("by", "agent"), usage=lines))
