"""The HTTP shell over the framework: one module per concern.

- ``agent_input``: ``POST /agent/input`` (JSON or server-sent events)
- ``info``: ``GET /agents``, ``GET /health``
- ``body``: reading and checking the request body
- ``auth``: the ``LIZ_API_KEY`` guard (pure ASGI)
- ``errors``: every failure answered as ``{"error": ...}``
- ``app``: the Starlette app that puts them together
"""

from __future__ import annotations

from liz.http.app import create_app, served_app

__all__ = ["create_app", "served_app"]
