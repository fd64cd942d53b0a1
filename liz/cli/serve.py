"""``liz serve``: the app over HTTP."""

from __future__ import annotations

from typing import Annotated

import typer

from liz.cli.failing import reported
from liz.cli.options import (
    AgentsOption,
    LogLevelOption,
    ScriptedOption,
    TargetArgument,
    configure_logging,
    load,
)


def serve(
    target: TargetArgument = None,
    host: Annotated[str | None, typer.Option(help="Address to bind (SERVER_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to bind (SERVER_PORT).")] = None,
    agents: AgentsOption = None,
    migrate: Annotated[bool, typer.Option(help="Apply database migrations first.")] = True,
    scripted: ScriptedOption = False,
    log_level: LogLevelOption = "info",
) -> None:
    """Serve the app over HTTP: POST /agent/input, GET /agents, GET /health, the facts API."""
    from liz.cli.scripted import scripted_llm_if_asked
    from liz.cli.uvicorn_run import serve_app

    configure_logging(log_level)
    # serve_app says it runs scripted once the set-up is checked, in its first line.
    with reported(), scripted_llm_if_asked(scripted, announce=False):
        serve_app(load(target, agents), host=host, port=port, migrate=migrate, log_level=log_level)
