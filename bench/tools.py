"""What a turn with one tool call costs liz, against a floor of the same two chat calls.

    .venv/bin/python bench/tools.py                     # 8 rounds of 100 turns each way
    .venv/bin/python bench/tools.py --rounds 2 --turns 30   # quick

The scripted server runs in a process of its own; offered tools, it calls the first,
and answers the call's result with text. Three ways, taking turns in every round:

- floor: the openai SDK alone: ``chat.completions.create`` offering the tool, the
  function run, a second ``create`` with its result;
- liz's loop: ``ToolTurn.run`` (liz.tools.loop) on the same messages: the arguments
  validated by pydantic, the call run, the result serialised, both requests sent;
- liz's turn: ``AgentFramework.process`` through the standard chain on a SQLite file
  (memories loaded and stored, the tool call kept with the reply);
- for scale, a turn of an agent without tools (one chat call) and its floor, one
  ``create`` call: what the chain costs any turn, tools or not.

Printed: the median over the rounds of CPU and wall time a turn, the ratio to the
floor, and liz's own time over the floor in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from benchkit import markdown_table
from memory import measured_client
from openai import AsyncOpenAI
from scripted_server import scripted_server

from liz.agent import BaseAgent
from liz.character import Character
from liz.config import Settings
from liz.db.engine import create_engine
from liz.db.migrate import upgrade_async
from liz.llm.messages import build_messages
from liz.routes import conversation
from liz.runtime.bootstrap import build_framework
from liz.runtime.services import Runtime
from liz.runtime.turn_trace import Trace
from liz.tools.context import ToolContext
from liz.tools.loop import ToolTurn
from liz.types import InputObject

Way = Callable[[], Awaitable[object]]
PROMPT = "What is the weather in Oslo?"


def weather(city: str) -> dict[str, str]:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return {"city": city, "sky": "clear"}


def agent() -> BaseAgent:
    made = BaseAgent(Character(agent_id="bench", name="Bench", system="You help."))
    made.add_route(conversation)
    made.add_tool(weather)
    return made


async def measure(base_url: str, rounds: int, turns: int, folder: Path) -> list[list[str]]:
    sdk = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    spec = [agent().tools["weather"].spec()]

    async def floor() -> object:
        messages: list[dict[str, object]] = [{"role": "user", "content": PROMPT}]
        first = await sdk.chat.completions.create(
            model="scripted-large",
            messages=messages,
            tools=spec,  # type: ignore[arg-type]
        )
        message = first.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or []:
            result = weather(**json.loads(call.function.arguments))  # type: ignore[union-attr]
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )
        second = await sdk.chat.completions.create(
            model="scripted-large",
            messages=messages,
            tools=spec,  # type: ignore[arg-type]
        )
        return second.choices[0].message.content

    url = f"sqlite+aiosqlite:///{folder / 'bench.db'}"
    await upgrade_async(url)
    settings = Settings(_env_file=None, database_url=url)  # type: ignore[call-arg]
    engine = create_engine(url)
    llm = measured_client(base_url)
    runtime = Runtime(settings=settings, engine=engine, llm_client=llm)
    framework = build_framework(runtime)
    bench_agent = agent()
    ctx = ToolContext(runtime, bench_agent, "u", "r", Trace())

    async def loop() -> object:
        turn = ToolTurn(llm, bench_agent.tools, ctx)
        return (await turn.run(build_messages(PROMPT, system="You help."), [])).text

    async def whole_turn() -> object:
        said = InputObject(agent_id="bench", user_id="u", text=PROMPT)
        res = await framework.process(said, bench_agent)
        if res.reply is None:
            raise RuntimeError(f"the turn failed: {res.error}")
        return res.reply.text

    plain_agent = BaseAgent(Character(agent_id="plain", name="Plain", system="You help."))
    plain_agent.add_route(conversation)

    async def plain_turn() -> object:
        said = InputObject(agent_id="plain", user_id="u", text=PROMPT)
        res = await framework.process(said, plain_agent)
        if res.reply is None:
            raise RuntimeError(f"the turn failed: {res.error}")
        return res.reply.text

    async def one_create() -> object:
        messages = [{"role": "user", "content": PROMPT}]
        answer = await sdk.chat.completions.create(
            model="scripted-large",
            messages=messages,  # type: ignore[arg-type]
        )
        return answer.choices[0].message.content

    ways: dict[str, Way] = {
        "floor: the SDK's two create calls": floor,
        "liz's loop (ToolTurn.run)": loop,
        "liz's turn (AgentFramework.process)": whole_turn,
        "no tools: the SDK's one create call": one_create,
        "no tools: liz's turn, one chat call": plain_turn,
    }
    for way in ways.values():  # warm up: connections, caches, the first imports
        for _ in range(5):
            await way()
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    wall: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(rounds):
        for name, way in ways.items():
            started_cpu, started = time.process_time(), time.perf_counter()
            for _ in range(turns):
                await way()
            cpu[name].append((time.process_time() - started_cpu) / turns * 1000)
            wall[name].append((time.perf_counter() - started) / turns * 1000)
    await llm.close()
    await sdk.close()
    await engine.dispose()
    base_cpu = statistics.median(cpu["floor: the SDK's two create calls"])
    base_wall = statistics.median(wall["floor: the SDK's two create calls"])
    rows = []
    for name in ways:
        c, w = statistics.median(cpu[name]), statistics.median(wall[name])
        rows.append(
            [
                name,
                f"{c:.2f}",
                f"{c / base_cpu:.2f}",
                f"{c - base_cpu:+.2f}",
                f"{w:.2f}",
                f"{w / base_wall:.2f}",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()
    with scripted_server() as base_url, tempfile.TemporaryDirectory() as folder:
        rows = asyncio.run(measure(base_url, args.rounds, args.turns, Path(folder)))
    print(f"One tool call a turn, medians of {args.rounds} rounds of {args.turns} turns:")
    header = ["way", "CPU ms/turn", "CPU ratio", "CPU ms over floor", "wall ms/turn", "wall ratio"]
    print(markdown_table(header, rows))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
