"""`liz chat` asks the user about a call that needs approval: in-process and against a server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from liz.testing.openai_server import ScriptedOpenAI, call_tool
from tests.serve_process import liz_serve
from tests.serve_process import run_liz as liz

pytestmark = pytest.mark.slow

SHOP = '''
from pathlib import Path

from liz.agent import BaseAgent
from liz.app import App
from liz.character import Character
from liz.routes import conversation

clerk = BaseAgent(Character(agent_id="clerk", name="Clerk", system="You help with orders."))
clerk.add_route(conversation)


@clerk.tool(requires_approval=True)
def refund(order_id: str, amount: float) -> str:
    """Refund an order; money leaves the shop."""
    with open(Path(__file__).with_name("refunds.txt"), "a") as refunds:
        refunds.write(f"{order_id} {amount}\\n")
    return f"refunded {amount} on {order_id}"


app = App([clerk])
'''


def shop(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "shop.py").write_text(SHOP)
    return {
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'shop.db'}",
        "LIZ_FACTS_ENABLED": "false",
    }


def refunds(tmp_path: Path) -> list[str]:
    path = tmp_path / "refunds.txt"
    return path.read_text().splitlines() if path.exists() else []


def scripted_refund(then: str) -> ScriptedOpenAI:
    scripted = ScriptedOpenAI()
    scripted.reply(call_tool("refund", {"order_id": "A1", "amount": 12.5}, text="I can."), then)
    return scripted


def chat_in_process(tmp_path: Path, scripted: ScriptedOpenAI, stdin: str) -> str:
    """What ``liz chat shop:app`` printed, given ``stdin``, the shop's model ``scripted``."""
    env = shop(tmp_path)
    with scripted.serve() as base_url:
        result = liz(
            "chat",
            "shop:app",
            env={**env, "OPENAI_BASE_URL": base_url},
            cwd=tmp_path,
            stdin=stdin,
        )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(("answer", "done"), [("y", ["A1 12.5"]), ("n", [])])
def test_chat_in_process_asks_before_a_call_that_needs_approval(
    tmp_path: Path, answer: str, done: list[str]
) -> None:
    scripted = scripted_refund("As you wish.")
    printed = chat_in_process(tmp_path, scripted, f"Refund order A1\n{answer}\n")
    asked = 'Clerk asks to run refund({"order_id": "A1", "amount": 12.5}). Allow it? [y/n]'
    assert asked in printed
    assert "Clerk> As you wish." in printed
    assert refunds(tmp_path) == done
    told = json.dumps(scripted.chat_requests[-1].tool_results[0])
    assert ("refunded 12.5 on A1" in told) if done else ("denied" in told)


def test_chat_leaves_a_call_waiting_when_the_answer_is_neither_yes_nor_no(tmp_path: Path) -> None:
    scripted = scripted_refund("unused")
    printed = chat_in_process(tmp_path, scripted, "Refund order A1\nmaybe\n")
    assert "(left waiting: approval " in printed
    assert refunds(tmp_path) == []
    assert len(scripted.chat_requests) == 1


def test_chat_against_a_server_sends_the_decision(tmp_path: Path) -> None:
    env = shop(tmp_path)
    scripted = scripted_refund("Refunded.")
    with scripted.serve() as base_url:
        env["OPENAI_BASE_URL"] = base_url
        with liz_serve(env, tmp_path, target="shop:app") as url:
            result = liz("chat", "--url", url, env={}, cwd=tmp_path, stdin="Refund A1\nyes\n")
    assert result.returncode == 0, result.stderr
    assert "Clerk asks to run refund(" in result.stdout
    assert "Clerk> Refunded." in result.stdout
    assert refunds(tmp_path) == ["A1 12.5"]
