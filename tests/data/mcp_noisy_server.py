"""An MCP server over stdio that also writes lines that are not JSON-RPC to its stdout, as a
server with a print() left in does, a thousand a second. It speaks the protocol by hand
(initialize, tools/list, ping), since the SDK's own server keeps prints off stdout."""

from __future__ import annotations

import json
import sys
import threading
import time

_out = threading.Lock()


def write(line: str) -> None:
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def answer(request: dict[str, object], result: dict[str, object]) -> None:
    write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}))


def chatter() -> None:
    while True:
        write("debug: cache warmed, 3 entries")
        time.sleep(0.001)


def main() -> None:
    threading.Thread(target=chatter, daemon=True).start()
    for line in sys.stdin:
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request:
            continue  # a notification
        if method == "initialize":
            params = request.get("params") or {}
            answer(
                request,
                {
                    "protocolVersion": params.get("protocolVersion", "2025-06-18"),  # type: ignore[union-attr]
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "noisy", "version": "1.0"},
                },
            )
        elif method == "tools/list":
            answer(request, {"tools": []})
        else:
            answer(request, {})


if __name__ == "__main__":
    main()
