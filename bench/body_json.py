"""What writing an HTTP body costs: a reply, and a list of facts, from liz's objects to bytes.

Each body is made the way liz makes it now (its pydantic model, ``liz.http.bodies``) and
the way it was made before the models (a dict written by hand, or the reply model without
its declared optional fields), in the same run; the table gives microseconds per body and
the ratio to the hand-written way.

    .venv/bin/python bench/body_json.py [--rounds 5] [--loops 2000]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from benchkit import markdown_table
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from starlette.responses import JSONResponse

from liz.facts.domain import Fact
from liz.http.bodies import FactList, json_response, wire
from liz.types import AgentReply


class ReplyBefore(BaseModel):
    """The reply model as it was: its five fields (``pendingApproval`` was set as an extra)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    text: str
    route: str | None
    agent_id: str
    user_id: str
    room_id: str


def fact_before(fact: Fact) -> dict[str, Any]:
    """A fact's body as ``Fact.to_json_dict`` wrote it."""

    def stamp(value: datetime | None) -> str | None:
        return value.isoformat() if value is not None else None

    return {
        "id": fact.id,
        "agentId": fact.agent_id,
        "userId": fact.user_id,
        "text": fact.text,
        "subject": fact.subject,
        "categories": list(fact.categories),
        "createdAt": stamp(fact.created_at),
        "updatedAt": stamp(fact.updated_at),
        "validFrom": stamp(fact.valid_from),
        "invalidFrom": stamp(fact.invalid_from),
        "retiredAt": stamp(fact.retired_at),
        "sourceMemoryId": fact.source_memory_id,
        "score": fact.score,
    }


def per_call_us(work: Callable[[], object], rounds: int, loops: int) -> float:
    """The best of ``rounds`` runs of ``loops`` calls, in microseconds per call."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(loops):
            work()
        best = min(best, time.perf_counter() - started)
    return best / loops * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--loops", type=int, default=2000)
    args = parser.parse_args()

    text = "Price for value: say what the customer gets before what it costs. " * 4
    fields = {"text": text, "route": "conversation", "agent_id": "business-advisor"}
    fields |= {"user_id": "u1", "room_id": "business-advisor:u1"}
    before, now = ReplyBefore(**fields), AgentReply(**fields)
    stamp = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    facts = [
        Fact(f"id-{n}", "business-advisor", "u1", f"User owns bakery {n}", "user",
             ("work", "food"), stamp, stamp, stamp, None, None, f"m-{n}", 0.8)
        for n in range(100)
    ]  # fmt: skip

    def reply_before() -> JSONResponse:
        return JSONResponse(before.model_dump(mode="json", by_alias=True))

    def facts_before() -> JSONResponse:
        return JSONResponse({"facts": [fact_before(fact) for fact in facts]})

    def facts_now() -> object:
        return json_response(FactList(facts=facts))

    cases: list[tuple[str, Callable[[], object], int]] = [
        ("reply: the five fields (before)", reply_before, args.loops),
        ("reply: AgentReply, wire() (now)", lambda: JSONResponse(wire(now)), args.loops),
        ("reply: AgentReply, json_response()", lambda: json_response(now), args.loops),
        ("100 facts: to_json_dict (before)", facts_before, args.loops // 20),
        ("100 facts: FactList (now)", facts_now, args.loops // 20),
    ]  # fmt: skip
    timings = {name: per_call_us(work, args.rounds, loops) for name, work, loops in cases}
    rows = []
    for name, us in timings.items():
        reference = timings[next(n for n in timings if n.split(":")[0] == name.split(":")[0])]
        rows.append([name, f"{us:.1f}", f"{us / reference:.2f}x"])
    print(markdown_table(["body", "µs per body", "ratio to before"], rows))


if __name__ == "__main__":
    main()
