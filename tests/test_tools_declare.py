"""Declaring tools: what the model is shown, and signatures refused at declaration."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from liz.errors import UsageError
from liz.tools import ToolContext
from tests.tools_world import tool_agent


class Address(BaseModel):
    street: str
    city: str


def test_hints_defaults_and_docstring_describe_the_tool() -> None:
    agent = tool_agent()

    @agent.tool(name="ship")
    def send_parcel(ctx: ToolContext, to: Address, express: bool = False) -> str:
        """Send a parcel.

        Goes out the same day.

        Args:
            to: Where it goes.
            express: Whether to pay for next-day delivery.
        """
        return "sent"

    spec = agent.tools["ship"].spec()["function"]
    assert spec["description"] == "Send a parcel.\n\nGoes out the same day."
    properties = spec["parameters"]["properties"]
    assert set(properties) == {"to", "express"}
    assert properties["express"]["default"] is False
    assert properties["express"]["description"] == "Whether to pay for next-day delivery."
    assert spec["parameters"]["required"] == ["to"]
    assert send_parcel.__name__ == "send_parcel"  # the decorator hands the function back


def test_add_tool_takes_a_plain_function() -> None:
    agent = tool_agent()

    def echo(text: str) -> str:
        """Say it back."""
        return text

    agent.add_tool(echo)
    assert list(agent.tools) == ["echo"]


def no_hint(order_id) -> str:  # type: ignore[no-untyped-def]
    return str(order_id)


class Opaque:
    pass


def opaque(thing: Opaque) -> str:
    return "?"


def splat(*items: str) -> str:
    return ""


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        (no_hint, ["no_hint", "'order_id'", "no type hint"]),
        (opaque, ["opaque", "'thing'", "no JSON schema"]),
        (splat, ["splat", "'items'", "*args"]),
    ],
)
def test_a_signature_that_cannot_be_described_is_refused_naming_function_and_parameter(
    fn: Any, words: list[str]
) -> None:
    agent = tool_agent()
    with pytest.raises(UsageError) as refused:
        agent.add_tool(fn)
    for word in words:
        assert word in str(refused.value)
    assert agent.tools == {}


def test_two_tools_with_one_name_and_reserved_names_are_refused() -> None:
    agent = tool_agent()

    def look() -> str:
        return ""

    agent.add_tool(look)
    with pytest.raises(UsageError, match="already has a tool named 'look'"):
        agent.add_tool(look)
    with pytest.raises(UsageError, match="for MCP tools"):
        agent.add_tool(look, name="mcp__x__look")
