"""ASGI entry points for servers other than ``liz serve``.

    uvicorn myapp:app                                # your App is an ASGI app itself
    uvicorn --factory liz.asgi:app_from_env --workers 4

``app_from_env`` serves ``LIZ_APP`` (``MODULE:ATTRIBUTE``) when set, else the agents of
``LIZ_AGENTS_DIR`` (default: the bundled agents) with the standard chain.
"""

from __future__ import annotations

from liz.app import App
from liz.config import Settings
from liz.settings_errors import load_settings
from liz.target import load_app


def app_from_env() -> App:
    return load_app(load_settings(Settings).liz_app)
