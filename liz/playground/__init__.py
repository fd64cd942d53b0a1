"""The playground: one page at ``GET /playground`` to chat with an agent and see why it
answered as it did (the prompt it was sent, its route, the facts it recalled, each
step's time), and the user's facts with their history.

- ``pages``: the page routes and the web templates (Jinja2, plain HTML/CSS/JS, inline)
- ``gate``: with ``LIZ_API_KEY`` set, a browser's page request without the key gets a
  401 whose body asks for the key; the key stays in the tab (sessionStorage)
"""

from __future__ import annotations

from liz.playground.gate import KeyPromptGate
from liz.playground.pages import favicon_routes, playground_routes

__all__ = ["KeyPromptGate", "favicon_routes", "playground_routes"]
