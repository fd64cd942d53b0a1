"""Trying liz without an LLM key: the scripted model of :mod:`liz.testing.scripted_model`.

``liz serve --scripted`` and ``liz chat --scripted`` (or ``LIZ_SCRIPTED_LLM=true``) start
it in-process on a loopback port and point ``OPENAI_BASE_URL`` at it; ``liz scripted-llm``
serves it alone for other tools. A configured key or base URL always wins: asking for
the scripted model with one set is refused.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from liz.cli.failing import fail, reported

logger = logging.getLogger(__name__)

LLM_VARIABLES = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL")


@contextmanager
def scripted_llm_if_asked(flag: bool) -> Iterator[None]:
    """With ``flag`` or ``LIZ_SCRIPTED_LLM``, run the scripted model for the block."""
    from liz.config import Settings
    from liz.settings_errors import load_settings
    from liz.testing.scripted_model import scripted_model

    with reported():
        settings = load_settings(Settings)
    if not (flag or settings.liz_scripted_llm):
        yield
        return
    values = (settings.openai_api_key, settings.openrouter_api_key, settings.openai_base_url)
    named = [name for name, value in zip(LLM_VARIABLES, values, strict=True) if _is_set(value)]
    if named:
        fail(
            f"the scripted model is never used with a real LLM configured: unset "
            f"{' and '.join(named)}, or drop --scripted / LIZ_SCRIPTED_LLM"
        )
    # From here the app sees an ordinary OpenAI-compatible endpoint: the scripted model's.
    given = {"OPENAI_BASE_URL": os.environ.get("OPENAI_BASE_URL")}
    given["LIZ_SCRIPTED_LLM"] = os.environ.get("LIZ_SCRIPTED_LLM")
    with scripted_model().serve() as base_url:
        os.environ.update(OPENAI_BASE_URL=base_url, LIZ_SCRIPTED_LLM="false")
        logger.warning("no LLM: liz's scripted model answers (replies start with [scripted reply])")
        try:
            yield
        finally:
            for name, value in given.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def _is_set(value: object) -> bool:
    secret = getattr(value, "get_secret_value", None)
    return bool(secret() if secret is not None else value)


def scripted_llm(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 4010,
) -> None:
    """Serve liz's scripted model alone, OpenAI-compatible, at http://HOST:PORT/v1."""
    import uvicorn

    from liz.serving import ensure_port_free
    from liz.testing.scripted_model import scripted_model

    with reported():
        ensure_port_free(host, port)
    typer.echo(f"scripted model at http://{host}:{port}/v1 (replies start with [scripted reply])")
    uvicorn.run(scripted_model().app, host=host, port=port, log_level="warning", log_config=None)
