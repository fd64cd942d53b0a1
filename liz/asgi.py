"""ASGI entry points for servers other than ``liz serve``.

    uvicorn myapp:app                                # your App is an ASGI app itself
    uvicorn --factory liz.asgi:app_from_env --workers 4

``app_from_env`` serves ``LIZ_APP`` (``MODULE:ATTRIBUTE``) when set, else the agents of
``LIZ_AGENTS_DIR`` (default: the bundled agents) with the standard chain. With
``LIZ_SCRIPTED_LLM=true`` liz's scripted model answers, as for ``liz serve --scripted``.
"""

from __future__ import annotations

import logging

from liz.app import App
from liz.cli.app_target import load_app
from liz.config import Settings
from liz.config.loading import load_settings

logger = logging.getLogger(__name__)


def app_from_env() -> App:
    app = load_app(load_settings(Settings).liz_app)
    if app.settings.liz_scripted_llm:
        from liz.llm.scripted_endpoint import SCRIPTED_NOTICE

        logger.warning(SCRIPTED_NOTICE)
    return app
