"""The playground's Tools region and its Approve button, in Debian's Chromium (Playwright)."""

from __future__ import annotations

from pathlib import Path

import pytest

from liz.testing.openai_server import ScriptedOpenAI, call_tool
from tests.tools_world import _no_facts, served, tool_agent, tool_app

__all__ = ["_no_facts"]
pytestmark = pytest.mark.slow
CHROMIUM = Path("/usr/bin/chromium")

if not CHROMIUM.exists():
    pytest.skip("Chromium is not installed at /usr/bin/chromium", allow_module_level=True)

from playwright.sync_api import expect, sync_playwright  # noqa: E402


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_playground_shows_tool_calls_and_approves_a_pending_one(database_url: str) -> None:
    refunds: list[str] = []
    agent = tool_agent()

    @agent.tool
    def order_status(order_id: str) -> str:
        """Look up an order."""
        return f"{order_id} shipped"

    @agent.tool(requires_approval=True)
    def refund(order_id: str) -> str:
        """Refund an order."""
        refunds.append(order_id)
        return f"{order_id} refunded"

    scripted = ScriptedOpenAI()
    scripted.reply(
        call_tool("order_status", {"order_id": "A1"}),
        "A1 has shipped.",
        call_tool("refund", {"order_id": "A1"}, text="I can refund A1."),
        "A1 is refunded.",
    )
    with (
        scripted.serve() as url,
        served(tool_app(agent, database_url, url)) as client,
        sync_playwright() as playwright,
    ):
        if True:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page()
            page.goto(f"{client.base_url}/playground")
            page.get_by_label("Message").fill("Where is A1?")
            page.get_by_role("button", name="Send").click()
            messages = page.get_by_role("log")
            expect(messages).to_contain_text("A1 has shipped.")
            expect(messages).to_contain_text("→ order_status")
            tools = page.get_by_role("region", name="Tools")
            expect(tools).to_contain_text("order_status")
            expect(tools).to_contain_text("A1 shipped")

            page.get_by_label("Message").fill("Refund it")
            page.get_by_role("button", name="Send").click()
            expect(messages).to_contain_text("Run refund")
            assert refunds == []
            page.get_by_role("button", name="Approve").click()
            expect(messages).to_contain_text("A1 is refunded.")
            browser.close()
    assert refunds == ["A1"]
