"""The HTTP shell over the framework: one module per concern.

- ``agent_input``: ``POST /agent/input`` (JSON or server-sent events)
- ``health``: ``GET /health``, ``GET /agents``
- ``edge``: the pure ASGI middleware every request passes, in order:
  ``request_context`` (request id, an answer for any failure), ``deadline``
  (``LIZ_REQUEST_TIMEOUT``), ``auth`` (``LIZ_API_KEY`` and user tokens), ``body``
  (the size limit; also reading and checking the body)
- ``idempotency``: ``Idempotency-Key``, the first outcome replayed to retries
- ``error_responses``: every failure answered as ``{"error": ...}``
- ``starlette_app``: the Starlette app that puts them together
"""

from __future__ import annotations

from liz.http.starlette_app import create_app, served_app

__all__ = ["create_app", "served_app"]
