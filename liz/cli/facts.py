"""``liz facts``: look at what agents remember about users, and re-embed it.

For example::

    $ liz facts list --agent ada-bot --user user-1
    $ liz facts search "favourite drink" --agent ada-bot --user user-1
    $ liz facts history 3f1c... --agent ada-bot --user user-1
    $ liz facts reindex --agent ada-bot
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from liz.cli.failing import fail
from liz.cli.learning_queue import discard, give_up, retry, show_queue
from liz.cli.options import ScriptedOption
from liz.cli.session import run, with_session

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from liz.facts.domain import Fact
    from liz.facts.store import FactStore

# Heavy modules are imported inside the commands, so `liz --help` stays fast.
facts_app = typer.Typer(
    help="Inspect and maintain what agents know about users (long-term facts).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
T = TypeVar("T")

AgentOption = Annotated[str, typer.Option("--agent", help="Agent id.")]
UserOption = Annotated[str, typer.Option("--user", help="User id.")]


def _run(work: Callable[[FactStore], Awaitable[T]], *, scripted: bool) -> T:
    """Open the runtime from the settings, run ``work`` on its facts store, close it."""
    from liz.cli.scripted import scripted_llm_if_asked
    from liz.config import Settings
    from liz.config.loading import load_settings
    from liz.errors import LizError
    from liz.runtime.bootstrap import open_runtime

    async def main() -> T:
        async with open_runtime(load_settings(Settings), learn=False) as runtime:
            if runtime.facts is None:
                raise LizError(
                    "searching and re-embedding facts needs an LLM for embeddings: set "
                    "OPENAI_API_KEY, OPENROUTER_API_KEY or OPENAI_BASE_URL, or try it "
                    "with --scripted (LIZ_SCRIPTED_LLM=true)"
                )
            return await work(runtime.facts)

    logging.basicConfig(level=logging.WARNING)
    with scripted_llm_if_asked(scripted):
        return run(main, reading="the facts")


def _read(work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run ``work`` on a session of DATABASE_URL: reading facts needs no LLM."""
    logging.basicConfig(level=logging.WARNING)
    return with_session(work, reading="the facts")


def _show(facts: list[Fact]) -> None:
    if not facts:
        typer.echo("no facts")
    for fact in facts:
        state = "" if fact.active else f"  (retired {fact.retired_at:%Y-%m-%d %H:%M})"
        score = f"{fact.score:.3f}  " if fact.score is not None else ""
        typer.echo(f"{fact.id}  {score}{fact.text}  [{', '.join(fact.categories)}]{state}")


@facts_app.command("list")
def list_facts(
    agent: AgentOption,
    user: UserOption,
    retired: Annotated[bool, typer.Option("--retired", help="Include retired facts.")] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many facts.")] = 100,
) -> None:
    """List a user's facts, newest first (no LLM needed)."""
    from liz.facts.queries import list_facts as newest_first

    scope = (agent, user)
    _show(_read(lambda s: newest_first(s, scope, include_retired=retired, limit=limit, offset=0)))


@facts_app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for: words or a question.")],
    agent: AgentOption,
    user: UserOption,
    limit: Annotated[int, typer.Option(min=1, help="At most this many facts.")] = 10,
    threshold: Annotated[
        float | None, typer.Option(help="Similarity floor (default LIZ_FACTS_SEARCH_THRESHOLD).")
    ] = None,
    scripted: ScriptedOption = False,
) -> None:
    """Search a user's facts by meaning and exact words; prints similarity, text, categories."""
    found = _run(
        lambda store: store.search(query, agent, user, limit=limit, threshold=threshold),
        scripted=scripted,
    )
    _show(found)


@facts_app.command()
def history(
    fact_id: Annotated[str, typer.Argument(help="The fact's id (from `liz facts list`).")],
    agent: AgentOption,
    user: UserOption,
) -> None:
    """Every change to one fact, oldest first (no LLM needed)."""
    from liz.facts.queries import fact_history

    entries = _read(lambda session: fact_history(session, (agent, user), fact_id))
    if not entries:
        fail(f"no fact {fact_id!r} for agent {agent!r} and user {user!r}")
    for entry in entries:
        change = {
            "ADD": f"+ {entry.new_text}",
            "UPDATE": f"{entry.old_text}  ->  {entry.new_text}",
            "DELETE": f"- {entry.old_text}",
        }.get(entry.event.value, entry.new_text or "")
        reason = f"  ({entry.reason})" if entry.reason else ""
        typer.echo(
            f"{entry.at:%Y-%m-%d %H:%M:%S}  {entry.event.value:<6} {entry.actor:<4} "
            f"{change}{reason}"
        )


@facts_app.command()
def reindex(
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's facts.")] = None,
    user: Annotated[str | None, typer.Option("--user", help="Only this user's facts.")] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="Re-embed every fact, not only outdated ones.")
    ] = False,
    scripted: ScriptedOption = False,
) -> None:
    """Re-embed facts with the current LIZ_EMBEDDING_MODEL (after changing it)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("re-embedding facts"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(),
    ) as bar:
        task = bar.add_task("reindex", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        count = _run(
            lambda store: store.reindex(agent, user, everything=everything, progress=advance),
            scripted=scripted,
        )
    typer.echo(f"re-embedded {count} facts")


# The learning queue (liz.learning_queue): what is still to be learned, retrying it,
# and giving up on what cannot be.
facts_app.command("queue")(show_queue)
facts_app.command("retry")(retry)
facts_app.command("give-up")(give_up)
facts_app.command("discard")(discard)
