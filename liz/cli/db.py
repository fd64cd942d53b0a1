"""``liz db upgrade``: create or update the tables in ``DATABASE_URL``."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from liz.cli.failing import reported
from liz.cli.options import configure_logging

db_app = typer.Typer(
    help="Manage the database schema.", no_args_is_help=True, rich_markup_mode=None
)


@db_app.command("upgrade")
def db_upgrade(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log each migration as it runs.")
    ] = False,
) -> None:
    """Create or update the tables in DATABASE_URL to the latest schema."""
    from liz.config import Settings
    from liz.config.loading import load_settings
    from liz.db.migrate import upgrade
    from liz.db.url import describe

    configure_logging("warning")
    if verbose:
        logging.getLogger("alembic").setLevel(logging.INFO)
        logging.getLogger().setLevel(logging.INFO)
    with reported():
        settings = load_settings(Settings)
        done = upgrade(settings.database_url)
    where = describe(settings.database_url)
    if done.created:
        typer.echo(f"database created at the latest schema ({done.after}): {where}")
    elif done.adopted_prisma:
        typer.echo(f"database adopted from Prisma and upgraded to {done.after}: {where}")
    elif done.changed:
        typer.echo(f"database upgraded from {done.before} to {done.after}: {where}")
    else:
        typer.echo(f"database is up to date ({done.after}): {where}")
