"""`liz twitter outbox`: what the outbox holds that is not confirmed on X, and giving it up.

The held tweets are made by the bot itself (the fake X times out, hides posts,
refuses duplicates); the command reads the same database as another process would.
"""

from __future__ import annotations

import re
from datetime import timedelta

import anyio
import pytest
from click.testing import Result
from typer.testing import CliRunner

from liz.cli import app
from liz.twitter.errors import TwitterOutcomeUnknown
from liz.twitter.outbox_view import held_threads
from liz.twitter.tables import HandledTweetRecord, OutboxTweetRecord
from liz.twitter.transport import Tweet

# The fixture, shared with the single-bot tests (a re-export, so pytest finds it here).
from tests.test_twitter_bot import World
from tests.test_twitter_bot import world as world
from tests.test_twitter_exactly_once import long_answers
from tests.test_twitter_unconfirmed import x_refusing_duplicates

runner = CliRunner()


def cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


async def liz_twitter_outbox(world: World, *args: str) -> Result:
    """The command, as an operator runs it beside the bot (asyncio.run: off the test's loop)."""
    env = {"DATABASE_URL": world.runtime.settings.database_url}
    return await anyio.to_thread.run_sync(
        lambda: runner.invoke(app, ["twitter", "outbox", *args], env=env)
    )


async def a_held_reply(world: World) -> Tweet:
    """A mention whose reply's post call got no answer: the reply is held in the outbox."""
    mention = world.x.tweet_as("bob", "@ada_bot are you there?")
    world.x.fail_next(
        TwitterOutcomeUnknown("connection dropped while sending"), operations=("post",)
    )
    await world.start(world.bot(unconfirmed_post_wait_minutes=10))
    return mention


@pytest.mark.anyio
async def test_an_empty_outbox_says_so(world: World) -> None:
    result = await liz_twitter_outbox(world)
    assert result.exit_code == 0, result.output
    assert result.output == "the outbox holds nothing unconfirmed: every tweet planned is on X\n"


@pytest.mark.anyio
async def test_a_post_x_does_not_show_yet_is_listed_with_when_it_is_sent_again(
    world: World,
) -> None:
    world.x.time_out_after_accepting(unseen_for=timedelta(hours=1))
    await world.start(world.bot(post_immediately=True))
    await world.clock.advance(minutes=2)
    async with world.sessions() as session:
        [held] = await held_threads(session, now=world.clock.now(), wait_minutes=30)
    assert held.thread_key.startswith("post:")
    assert (held.position, held.count, held.text) == (0, 1, "Post number 1 about tea.")
    assert held.held == "post call got no answer; not on X yet"
    assert held.next_step == "looked for; sent again after 2025-01-01 12:30 UTC if not found"
    result = await liz_twitter_outbox(world)
    assert result.exit_code == 0, result.output
    title, header, line = result.output.splitlines()
    assert title == "1 thread not confirmed on X (times in UTC):"
    assert cells(header) == [
        "ACCOUNT", "THREAD", "TWEET", "UNANSWERED CALL", "HELD BECAUSE", "NEXT", "TEXT"
    ]  # fmt: skip
    # The command reads the wall clock, long past this virtual 2025: the wait is over.
    assert cells(line) == [
        "1",  # the account's X id: none of its tweets is stored yet to name it
        held.thread_key,
        "1 of 1",
        "2025-01-01 12:00",
        "post call got no answer; not on X yet",
        "sent again (same text) at the next try",
        "Post number 1 about tea.",
    ]
    await world.clock.advance(hours=1)  # X shows it: found, nothing held any more
    result = await liz_twitter_outbox(world)
    assert "the outbox holds nothing unconfirmed" in result.output


@pytest.mark.anyio
async def test_a_thread_held_by_a_tweet_x_called_a_duplicate_says_so(world: World) -> None:
    x = x_refusing_duplicates(world)
    long_answers(world)
    mention = x.tweet_as("bob", "@ada_bot seven parts please")
    x.time_out_after_accepting(after=2, unseen_for=timedelta(minutes=50))
    await world.start(world.bot(unconfirmed_post_wait_minutes=30))
    await world.clock.advance(minutes=45)
    async with world.sessions() as session:
        [held] = await held_threads(session, now=world.clock.now(), wait_minutes=30)
    # Named from the account's tweets stored (the thread's first two).
    assert (held.account, held.thread_key) == ("@ada_bot", f"reply:{mention.id}")
    assert (held.position, held.count) == (2, 7)  # the 3rd of 7: sent again, refused
    assert held.text.startswith("Part 3: tea tea")
    assert held.held == "taken as out (X refused a 2nd call), not shown yet"
    assert held.next_step == (
        "the 4 after it wait for it; the thread ends at 2025-01-01 13:00 UTC if not shown"
    )


@pytest.mark.anyio
async def test_abandoning_a_reply_never_posts_it_and_marks_the_mention_failed(
    world: World,
) -> None:
    mention = await a_held_reply(world)
    result = await liz_twitter_outbox(world, "--abandon", f"reply:{mention.id}")
    assert result.exit_code == 0, result.output
    assert result.output == f"gave up reply:{mention.id}: 1 tweet will not be posted\n"
    await world.clock.advance(hours=1)  # past the wait: it would have been sent again
    assert world.x.posts == []
    [row] = await world.rows(HandledTweetRecord)
    assert row.decision == "failed"
    assert "nothing unconfirmed" in (await liz_twitter_outbox(world)).output


@pytest.mark.anyio
async def test_a_reply_two_accounts_hold_is_given_up_only_for_the_account_named(
    world: World,
) -> None:
    mention = await a_held_reply(world)
    [ours] = await world.rows(OutboxTweetRecord)
    # Another bot, on another X account and the same database, answered the same
    # mention, and its reply is held too: the same thread key.
    other = "4242"
    async with world.sessions() as session, session.begin():
        session.add_all([
            OutboxTweetRecord(account_id=other, thread_key=ours.thread_key, position=0,
                              text="Hello from the other bot.", reply_to=ours.reply_to,
                              state="planned"),
            HandledTweetRecord(account_id=other, tweet_id=str(mention.id), stream="mentions",
                               decision="replying"),
        ])  # fmt: skip

    refused = await liz_twitter_outbox(world, "--abandon", ours.thread_key)
    assert refused.exit_code == 2
    assert f"thread '{ours.thread_key}' is in the outbox of 2 accounts" in refused.output
    assert "say whose with --account" in refused.output
    wrong = await liz_twitter_outbox(world, "--abandon", ours.thread_key, "--account", "@nobody")
    assert wrong.exit_code == 2
    assert "account '@nobody' has no thread" in wrong.output
    assert {row.state for row in await world.rows(OutboxTweetRecord)} == {"planned"}

    result = await liz_twitter_outbox(world, "--abandon", ours.thread_key, "--account", other)
    assert result.exit_code == 0, result.output
    assert result.output == f"gave up {ours.thread_key}: 1 tweet will not be posted\n"
    rows = await world.rows(OutboxTweetRecord)
    assert {(row.account_id, row.state) for row in rows} == {
        (ours.account_id, "planned"),
        (other, "dropped"),
    }
    handled = await world.rows(HandledTweetRecord)
    assert {row.account_id: row.decision for row in handled} == {
        ours.account_id: "replying",
        other: "failed",
    }
    listed = await liz_twitter_outbox(world, "--account", ours.account_id)
    assert listed.exit_code == 0, listed.output
    assert ours.thread_key in listed.output
    none = await liz_twitter_outbox(world, "--account", other)
    assert none.output == (
        f"the outbox holds nothing unconfirmed of {other}: every tweet planned is on X\n"
    )


@pytest.mark.anyio
async def test_abandoning_an_unknown_thread_is_refused_and_changes_nothing(
    world: World,
) -> None:
    world.x.time_out_after_accepting(unseen_for=timedelta(hours=1))
    await world.start(world.bot(post_immediately=True))
    before = (await liz_twitter_outbox(world)).output
    result = await liz_twitter_outbox(world, "--abandon", "post:no-such-thread")
    assert result.exit_code == 2
    assert "no thread 'post:no-such-thread' in the outbox" in result.output
    assert (await liz_twitter_outbox(world)).output == before
    blank = await liz_twitter_outbox(world, "--abandon", "  ")
    assert blank.exit_code == 2
    assert "name the thread to give up with --abandon THREAD" in blank.output


@pytest.mark.anyio
async def test_abandoning_a_post_x_never_shows_stops_looking_for_it(world: World) -> None:
    x = x_refusing_duplicates(world)
    x.time_out_after_accepting(unseen_for=timedelta(days=3))
    await world.start(world.bot(post_immediately=True, unconfirmed_post_wait_minutes=5))
    await world.clock.advance(hours=1)
    [row] = await world.rows(OutboxTweetRecord)
    assert (row.state, row.tweet_id) == ("posted", None)  # X called it a duplicate
    result = await liz_twitter_outbox(world, "--abandon", row.thread_key)
    assert result.exit_code == 0, result.output
    assert result.output == (
        f"gave up {row.thread_key}: 1 tweet taken as posted no longer looked for\n"
    )
    looked = x.calls.count("own_tweets")
    await world.clock.advance(hours=2)
    assert x.calls.count("own_tweets") == looked  # X is not searched for it any more
    assert "nothing unconfirmed" in (await liz_twitter_outbox(world)).output
    assert [t.text for t in x.posts] == ["Post number 1 about tea."]  # not posted again
