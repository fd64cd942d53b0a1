"""``liz serve``: migrate, check the set-up once, then run the app under uvicorn."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket

import uvicorn

from liz.app import App
from liz.config import ServerSettings
from liz.config.loading import load_settings
from liz.errors import UsageError
from liz.http.exposure import check_exposure
from liz.http.slow_clients import server_options

logger = logging.getLogger(__name__)


def serve_app(
    app: App, *, host: str | None, port: int | None, migrate: bool, log_level: str
) -> None:
    """Serve ``app`` until stopped. ``host``/``port`` win over SERVER_HOST/SERVER_PORT."""
    flags = {"server_host": host, "server_port": port}
    server = load_settings(ServerSettings, **{k: v for k, v in flags.items() if v is not None})
    app.migrate = migrate
    check_exposure(app.settings, server.server_host)
    asyncio.run(_check(app))
    ensure_port_free(server.server_host, server.server_port)
    logger.info("%s", first_line(app, server.server_host, server.server_port))
    uvicorn.run(
        app,
        host=server.server_host,
        port=server.server_port,
        log_level=log_level,
        log_config=None,
        **server_options(app.settings),
    )


def first_line(app: App, host: str, port: int) -> str:
    """What a newcomer needs next: where the agents answer, the playground, which LLM."""
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}"
    count = len(app.agents)
    line = f"liz serves {count} agent{'' if count == 1 else 's'} at {url}/agent/input"
    if app.settings.liz_playground:
        line += f"; try them at {url}/playground"
    if app.settings.liz_scripted_llm:
        from liz.llm.scripted_endpoint import SCRIPTED_NOTICE

        line += f"; {SCRIPTED_NOTICE}"
    return line


async def _check(app: App) -> None:
    """Open (and migrate) and close the app's process once, so a broken set-up fails here,
    in one clear line, rather than in uvicorn's lifespan."""
    async with app.open():
        pass


def ensure_port_free(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise UsageError(
                    f"port {port} on {host} is already in use: stop the server running there, "
                    "or pick another port with --port N (or SERVER_PORT)"
                ) from None
            raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
