"""Trying liz without an LLM key: the scripted model of :mod:`liz.testing.scripted_model`.

``--scripted`` on any command that needs an LLM means ``LIZ_SCRIPTED_LLM=true`` for that
command: the app's LLM client then reaches the scripted model in-process
(:mod:`liz.llm.scripted_endpoint`). ``liz scripted-llm`` serves it alone, over HTTP, for
other tools. A configured key or base URL always wins: asking for the scripted model with
one set is refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from liz.cli.failing import reported


@contextmanager
def scripted_llm_if_asked(flag: bool, *, announce: bool = True) -> Iterator[bool]:
    """With ``flag``, ``LIZ_SCRIPTED_LLM=true`` for the block; yields whether the scripted
    model answers (and, with ``announce``, says so on stderr). Settings are read (and a bad
    one fails) before anything starts."""
    from liz.config import Settings
    from liz.config.loading import load_settings
    from liz.llm.scripted_endpoint import SCRIPTED_NOTICE, check_scripted_alone

    given = os.environ.get("LIZ_SCRIPTED_LLM")
    if flag:
        os.environ["LIZ_SCRIPTED_LLM"] = "true"
    try:
        with reported():
            settings = load_settings(Settings)
            if settings.liz_scripted_llm:
                check_scripted_alone(settings)
        if settings.liz_scripted_llm and announce:
            typer.echo(SCRIPTED_NOTICE, err=True)
        yield settings.liz_scripted_llm
    finally:
        if given is None:
            os.environ.pop("LIZ_SCRIPTED_LLM", None)
        else:
            os.environ["LIZ_SCRIPTED_LLM"] = given


def scripted_llm(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 4010,
) -> None:
    """Serve liz's scripted model alone, OpenAI-compatible, at http://HOST:PORT/v1."""
    import uvicorn

    from liz.cli.uvicorn_run import ensure_port_free
    from liz.testing.scripted_model import scripted_model

    with reported():
        ensure_port_free(host, port)
    typer.echo(f"scripted model at http://{host}:{port}/v1 (replies start with [scripted reply])")
    uvicorn.run(scripted_model().app, host=host, port=port, log_level="warning", log_config=None)
