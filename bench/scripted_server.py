"""The scripted OpenAI-compatible server as a process of its own, for the benches.

    python bench/scripted_server.py --port 8765 --dim 256

Replies come at once, so a bench measures the framework's own cost, and in a process
of their own, so the server's work is not counted in the process being measured.
Chat answers: a short reply for plain chat; for fact extraction one fact about the
user per message listed, shaped as extraction writes them; for reconciliation an ADD
of the first new fact, reworded (the others are added as they are).
"""

from __future__ import annotations

import argparse
import itertools
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchkit import stop, wait_ready

REPLY = (
    "That sounds like a good plan. Start small, keep a note of what you learn each week, "
    "and come back to tell me how it went."
)
RELATIONS = ("sister", "brother", "friend", "colleague", "neighbour", "cousin", "partner")
NAMES = ("Mia", "Ola", "Sofia", "Jonas", "Aisha", "Lucas", "Emma", "Noah", "Lea", "Omar")
CITIES = ("Oslo", "Lisbon", "Kyoto", "Nairobi", "Lima", "Toronto", "Prague", "Hanoi")


def fact_sentences() -> Iterator[str]:
    """Facts about a user as extraction writes them, without end."""
    for number in itertools.count():
        relation = RELATIONS[number % len(RELATIONS)]
        name = NAMES[(number // len(RELATIONS)) % len(NAMES)]
        city = CITIES[(number // 3) % len(CITIES)]
        yield f"User's {relation} {name} lives in {city}"


def serve(port: int, dim: int) -> None:
    import uvicorn

    from liz.testing.openai_server import RecordedRequest, ScriptedOpenAI, call_tool

    facts = fact_sentences()
    server = ScriptedOpenAI(embedding_dim=dim)

    def answer(request: RecordedRequest) -> Any:
        if request.tool_names and request.messages[-1].get("role") != "tool":
            # Tools offered and none called yet: call the first (bench/tools.py).
            return call_tool(request.tool_names[0], {"city": "Oslo"})
        if request.schema_name == "ExtractedFacts":
            # One fact per message listed (several when learned together), naming it.
            count = max(request.prompt.count("<MESSAGE number="), 1)
            return {
                "facts": [
                    {
                        "message": number,
                        "text": next(facts),
                        "subject": "user",
                        "categories": ["family", "home"],
                    }
                    for number in range(1, count + 1)
                ]
            }
        if request.schema_name == "ReconcilePlan":
            decision = {
                "new_fact": 1,
                "event": "ADD",
                "id": None,
                "text": next(facts),
                "categories": ["family", "home"],
                "reason": "new information",
            }
            return {"decisions": [decision]}
        if request.response_format is not None:
            return {"value": True, "explanation": "scripted"}
        return REPLY

    server.respond_with(answer)
    # The server keeps every request for tests; a bench sends hundreds of thousands.
    server._requests = _Forgetful()
    uvicorn.run(
        server.app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        log_config=None,
    )


class _Forgetful(list[Any]):
    def append(self, item: Any) -> None:
        pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def scripted_server(dim: int = 256, log_dir: Path | None = None) -> Iterator[str]:
    """Run the server in a child process until the block ends; yields its base URL (.../v1)."""
    port = free_port()
    log = (log_dir or Path("/tmp")) / f"scripted-{port}.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, __file__, "--port", str(port), "--dim", str(dim)],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_ready(f"http://127.0.0.1:{port}/v1/models", process, log, timeout=180)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            stop(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dim", type=int, default=256, help="embedding dimension")
    args = parser.parse_args()
    serve(args.port, args.dim)


if __name__ == "__main__":
    main()
