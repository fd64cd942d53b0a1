"""NUL (``%00``) in any path id or query value is a 400 naming it, on every route, on
PostgreSQL (which cannot store NUL in text) as on SQLite, and changes nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import func, select
from starlette.routing import Route

from liz.db.tables import MemoryRecord
from liz.runtime.services import Runtime
from tests.fixtures.db import postgres_database_url

pytestmark = pytest.mark.anyio
database_url = pytest.fixture(postgres_database_url, name="database_url")
_PARAMETER = re.compile(r"\{([^}:]+)(:[^}]+)?\}")


def requests_with_nul(client: httpx.AsyncClient) -> Iterator[tuple[str, str]]:
    """(method, path) for every route of the app: each path parameter NUL in turn, and
    a query value NUL with the parameters harmless."""
    app = client._transport.app  # type: ignore[attr-defined]
    routes = [route for route in app.routes if isinstance(route, Route)]
    assert len(routes) > 10  # the walk reaches the whole API
    for route in routes:
        names = [match[1] for match in _PARAMETER.finditer(route.path)]
        for method in sorted((route.methods or {"GET"}) - {"HEAD"}):
            for nul in names:
                yield (
                    method,
                    _PARAMETER.sub(lambda m, nul=nul: "%00" if m[1] == nul else "x", route.path),
                )
            harmless = _PARAMETER.sub("x", route.path)
            yield method, f"{harmless}?userId=%00&agentId=a"
            yield method, f"{harmless}?q=ok%00ok"


async def test_nul_in_any_path_or_query_value_is_a_400_on_every_route(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    answers = {}
    for method, path in requests_with_nul(client):
        answer = await client.request(method, path, json={} if method != "GET" else None)
        answers[f"{method} {path}"] = (answer.status_code, answer.json().get("error", ""))
    wrong = {request: got for request, got in answers.items() if got[0] != 400}
    assert not wrong, wrong
    assert all("NUL (%00)" in error for _, error in answers.values())
    async with runtime.sessions() as session:
        assert await session.scalar(select(func.count()).select_from(MemoryRecord)) == 0
