"""An outage in the log: its first failure with a traceback, then counts, then one line when it
is over; not one traceback per refused request."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from liz.agent import BaseAgent
from liz.testing.openai_server import ScriptedOpenAI
from tests.test_edge_health import database, immutable, message, served  # noqa: F401

pytestmark = pytest.mark.anyio
REFUSED = 12


async def test_an_outage_is_one_traceback_then_one_line_when_it_is_over(
    database: Path,  # noqa: F811
    agent: BaseAgent,
    scripted: ScriptedOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with served(database, agent, scripted) as client:
        scripted.respond_with(lambda request: "Stored.")
        assert (await client.post("/agent/input", json=message("before"))).status_code == 200
        with caplog.at_level(logging.INFO, logger="liz"):
            with immutable(database):
                for i in range(REFUSED):
                    sent = await client.post("/agent/input", json=message(f"during {i}"))
                    assert sent.status_code == 503
                assert (await client.get("/health")).status_code == 503
            for _ in range(50):  # the first write that works again ends the outage
                if (await client.post("/agent/input", json=message("after"))).status_code == 200:
                    break
    liz_records = [r for r in caplog.records if r.name.startswith("liz")]
    with_traceback = [r for r in liz_records if r.exc_info]
    assert len(with_traceback) == 1, [r.getMessage() for r in with_traceback]
    assert with_traceback[0].getMessage().startswith("database outage: ")
    loud = [r for r in liz_records if r.levelno >= logging.WARNING]
    assert len(loud) <= 3, [r.getMessage() for r in loud]  # began, (goes on), over
    over = [r.getMessage() for r in liz_records if "outage over" in r.getMessage()]
    assert len(over) == 1
    assert f"{REFUSED + 1} requests refused in all" in over[0]
