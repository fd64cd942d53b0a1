"""Durable learning in one process: what a user said is learned from once, in order, after
any outage, and what can never be learned is listed with the reason."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest
from sqlalchemy import event
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from liz.http import create_app
from liz.llm import LLMClient
from liz.testing.clock import ManualClock
from liz.testing.openai_server import ScriptedOpenAI
from liz.types import InputObject, InputSource
from tests.learning_world import AGENT, Brain, World, fact_text, learned_counts, make_world

pytestmark = pytest.mark.anyio


@pytest.fixture
async def world(
    engine: AsyncEngine, llm: LLMClient, scripted: ScriptedOpenAI, database_url: str
) -> AsyncIterator[World]:
    brain = Brain()
    scripted.respond_with(brain)
    clock = ManualClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    world = make_world(engine, llm, brain, clock, database_url=database_url)
    yield world
    await world.runtime.background.drain()


async def test_facts_are_learned_right_after_the_reply_and_the_queue_is_empty(
    world: World, engine: AsyncEngine
) -> None:
    res = await world.say("ann", "I keep bees")
    assert res.reply is not None and res.reply.text == "Noted."
    await world.settle()
    assert await world.facts_of("ann") == [fact_text("I keep bees")]
    assert list((await learned_counts(engine)).values()) == [1]
    assert await backlog_of(world) == {"pending": 0, "failed": 0, "oldestPendingSeconds": None}


async def test_an_llm_outage_longer_than_every_retry_loses_nothing(
    world: World, engine: AsyncEngine
) -> None:
    world.brain.extraction_down = True
    users = ["ann", "bob", "cy"]
    for n in (1, 2, 3):
        for user in users:
            res = await world.say(user, f"{user} note {n}")
            assert res.reply is not None  # the user is answered; learning waits
    await world.settle()
    for _ in range(36):  # a day and a half of outage, the worker trying all along
        await world.later(hours=1)
    assert world.brain.learned_from == []
    assert (await backlog_of(world))["pending"] == 9
    assert (await backlog_of(world))["oldestPendingSeconds"] == 36 * 3600

    world.brain.extraction_down = False
    await world.later(hours=1)  # the longest wait between tries
    for user in users:
        assert sorted(await world.facts_of(user)) == [
            fact_text(f"{user} note {n}") for n in (1, 2, 3)
        ]
    # Each user's messages were learned in the order they were said, each once.
    for user in users:
        mine = [said for said in world.brain.learned_from if said.startswith(user)]
        assert mine == [f"{user} note {n}" for n in (1, 2, 3)]
    assert sorted((await learned_counts(engine)).values()) == [1] * 9
    assert await backlog_of(world) == {"pending": 0, "failed": 0, "oldestPendingSeconds": None}


async def test_a_message_whose_reply_failed_is_learned_from_when_the_llm_is_back(
    world: World, scripted: ScriptedOpenAI
) -> None:
    world.brain.replies_down = world.brain.extraction_down = True
    res = await world.say("ann", "I moved to Turku")
    assert res.reply is None and res.error is not None and res.error.status in (502, 503)
    await world.settle()
    await world.later(minutes=30)
    assert await world.facts_of("ann") == []

    world.brain.replies_down = world.brain.extraction_down = False
    await world.later(hours=1)
    assert await world.facts_of("ann") == [fact_text("I moved to Turku")]
    (extraction,) = [r for r in scripted.chat_requests if r.schema_name and "Turku" in r.prompt][
        -1:
    ]
    assert "user: I moved to Turku" in extraction.prompt
    assert "assistant:" not in extraction.prompt  # there was no reply to learn from


async def test_a_later_message_waits_for_the_earlier_one_of_the_same_user(
    world: World,
) -> None:
    world.brain.extraction_down = True
    await world.say("ann", "ann note 1")
    await world.settle()
    world.brain.extraction_down = False
    await world.say("ann", "ann note 2")  # its fast try must not overtake note 1
    await world.say("bob", "bob note 1")  # another user is not held up
    await world.settle()
    assert world.brain.learned_from == ["bob note 1"]
    await world.later(hours=1)
    assert sorted(await world.facts_of("ann")) == [fact_text("ann note 1"), fact_text("ann note 2")]
    assert world.brain.learned_from == ["bob note 1", "ann note 1", "ann note 2"]


async def test_a_job_that_keeps_getting_unusable_answers_is_failed_listed_and_retried(
    world: World, database_url: str, tmp_path: Path
) -> None:
    world.brain.bad_answers = True
    await world.say("ann", "I play the cello")
    await world.settle()  # two tries right after the reply
    await world.later(hours=1)  # the third: given up on
    await world.say("ann", "I sing in a choir")
    world.brain.bad_answers = False
    await world.settle()
    # The failed message does not hold up the user's next one.
    assert await world.facts_of("ann") == [fact_text("I sing in a choir")]
    assert await backlog_of(world) == {"pending": 0, "failed": 1, "oldestPendingSeconds": None}

    listed = liz_facts("queue", "--failed", database_url=database_url, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "0 pending, 1 failed" in listed.stdout
    assert "user ann" in listed.stdout and "3 failed tries" in listed.stdout
    assert "did not return a valid ExtractedFacts" in listed.stdout  # the reason

    retried = liz_facts("retry", "--all", database_url=database_url, cwd=tmp_path)
    assert retried.returncode == 0, retried.stderr
    assert "1 job due now" in retried.stdout
    await world.later(seconds=1)
    assert sorted(await world.facts_of("ann")) == sorted(
        [fact_text("I play the cello"), fact_text("I sing in a choir")]
    )
    assert await backlog_of(world) == {"pending": 0, "failed": 0, "oldestPendingSeconds": None}


async def test_a_message_the_endpoint_keeps_refusing_is_failed_and_the_next_is_learned_at_once(
    world: World, database_url: str, tmp_path: Path
) -> None:
    world.brain.refused = {"counterfeit"}
    await world.say("ann", "I sell counterfeit watches")
    await world.settle()  # two tries right after the reply
    await world.later(hours=1)  # the third: given up on
    assert await backlog_of(world) == {"pending": 0, "failed": 1, "oldestPendingSeconds": None}

    await world.say("ann", "I grow tomatoes")
    await world.settle()  # no clock time passes: learned right after its reply
    assert await world.facts_of("ann") == [fact_text("I grow tomatoes")]

    listed = liz_facts("queue", "--failed", database_url=database_url, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "user ann" in listed.stdout and "3 failed tries" in listed.stdout
    assert "the LLM endpoint answered 400" in listed.stdout  # the reason, for the operator


async def test_a_job_retried_for_ever_can_be_given_up_on_then_discarded(
    world: World, database_url: str, tmp_path: Path
) -> None:
    world.brain.overloaded = {"poison"}  # a 503 each time: retried as an outage
    await world.say("ann", "ann poison pill")
    await world.settle()
    await world.later(hours=1)
    await world.say("ann", "I grow tomatoes")
    await world.settle()
    await world.later(hours=1)
    assert await world.facts_of("ann") == []  # held up behind the poisoned message
    stuck, waiting = await jobs_of(world)

    def facts_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return liz_facts(*args, database_url=database_url, cwd=tmp_path)

    # Mistakes change nothing: an unknown id, a pending job discarded, a failed one given up.
    unknown = facts_cli("give-up", str(stuck.id), "999")
    assert unknown.returncode == 2
    assert "job 999 is not in the queue" in unknown.stderr
    assert "nothing was changed" in unknown.stderr
    too_soon = facts_cli("discard", str(stuck.id))
    assert too_soon.returncode == 2 and "give up on it first" in too_soon.stderr
    assert await jobs_of(world) == [stuck, waiting]
    assert await backlog_of(world) == {
        "pending": 2,
        "failed": 0,
        "oldestPendingSeconds": 2 * 3600,
    }

    given_up = facts_cli("give-up", str(stuck.id))
    assert given_up.returncode == 0, given_up.stderr
    assert "1 job failed" in given_up.stdout
    # The later message shared the outage's backoff; its cause given up, it is due now.
    await world.later(seconds=0)
    assert await world.facts_of("ann") == [fact_text("I grow tomatoes")]
    listed = facts_cli("queue", "--failed")
    assert f"#{stuck.id}" in listed.stdout and "message " + stuck.memory_id in listed.stdout
    assert "given up by an operator" in listed.stdout and "answered 503" in listed.stdout
    again = facts_cli("give-up", str(stuck.id))
    assert again.returncode == 2 and "already failed" in again.stderr

    discarded = facts_cli("discard", str(stuck.id))
    assert discarded.returncode == 0, discarded.stderr
    assert "1 job discarded" in discarded.stdout
    assert await backlog_of(world) == {"pending": 0, "failed": 0, "oldestPendingSeconds": None}
    await world.later(hours=2)
    assert await world.facts_of("ann") == [fact_text("I grow tomatoes")]  # never learned


async def test_retry_needs_job_ids_or_all(database_url: str, tmp_path: Path) -> None:
    result = liz_facts("retry", database_url=database_url, cwd=tmp_path)
    assert result.returncode == 2
    assert "name the jobs to retry" in result.stderr and "--all" in result.stderr


async def test_dry_runs_and_the_frameworks_own_inputs_queue_nothing(world: World) -> None:
    rehearsal = InputObject(agent_id=AGENT, user_id="ann", text="I keep bees")
    await world.framework.process(rehearsal, world.agent, dry_run=True)
    internal = InputObject(
        agent_id=AGENT, user_id="ann", text="write a post", source=InputSource.INTERNAL
    )
    await world.framework.process(internal, world.agent)
    await world.settle()
    await world.later(hours=1)
    assert world.brain.learned_from == []
    assert await backlog_of(world) == {"pending": 0, "failed": 0, "oldestPendingSeconds": None}


async def test_health_shows_the_backlog_and_its_age(world: World) -> None:
    world.brain.extraction_down = True
    await world.say("ann", "I keep bees")
    await world.settle()
    await world.clock.advance(minutes=5)
    app = create_app(world.framework, {AGENT: world.agent})
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost"
    ) as client:
        health = (await client.get("/health")).json()
    assert health["status"] == "ok"
    assert health["learning"] == {
        "pending": 1,
        "failed": 0,
        "oldestPendingSeconds": 300.0,
        "learnAfterIdleSeconds": 0.0,
    }


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_full_disk_delays_learning_and_loses_nothing(
    world: World, engine: AsyncEngine
) -> None:
    world.brain.extraction_down = True
    world.brain.padding = 900  # each fact needs room of its own
    users = [f"user-{n}" for n in range(6)]
    for user in users:
        await world.say(user, f"{user} tells a long story")
    await world.settle()
    disk = SqliteDisk(engine)
    await disk.fill()
    world.brain.extraction_down = False
    for _ in range(3):
        await world.later(hours=1)
    # Writes that still fit in the file's free room went through; the others wait.
    learned = sum([len(await world.facts_of(user)) for user in users])
    assert learned < len(users)
    assert (await backlog_of(world))["pending"] == len(users) - learned

    await disk.free()
    await world.later(hours=1)
    for user in users:
        assert len(await world.facts_of(user)) == 1
    assert sorted((await learned_counts(engine)).values()) == [1] * len(users)


class SqliteDisk:
    """A SQLite file that cannot grow (``max_page_count``), as on a full disk."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.limit: int | None = None
        event.listen(engine.sync_engine, "connect", self._limit)

    def _limit(self, connection: Any, _record: Any) -> None:
        if self.limit is not None:
            cursor = connection.cursor()
            cursor.execute(f"PRAGMA max_page_count={self.limit}")
            cursor.close()

    async def fill(self) -> None:
        """Stop the file growing, then fill what room is left in it."""
        async with self.engine.begin() as connection:
            await connection.exec_driver_sql('CREATE TABLE "DiskFiller" (junk BLOB)')
            pages = (await connection.exec_driver_sql("PRAGMA page_count")).scalar_one()
        self.limit = int(pages)
        await self.engine.dispose()  # every connection from now on sees the limit
        for size in (4000, 500, 50, 1):
            while True:
                try:
                    async with self.engine.begin() as connection:
                        await connection.exec_driver_sql(
                            f'INSERT INTO "DiskFiller" VALUES (randomblob({size}))'
                        )
                except OperationalError as exc:
                    assert "full" in str(exc)
                    break

    async def free(self) -> None:
        self.limit = None
        await self.engine.dispose()


async def backlog_of(world: World) -> dict[str, Any]:
    from liz.learning_queue.health import learning_backlog

    found = await learning_backlog(world.runtime)
    found.pop("learnAfterIdleSeconds")  # a setting, the same in every test here
    return found


class JobRow(NamedTuple):
    id: int
    memory_id: str
    status: str
    attempts: int


async def jobs_of(world: World) -> list[JobRow]:
    """The queue's jobs, oldest first, as (id, memory id, status, tries) rows."""
    from liz.learning_queue.jobs import list_jobs

    async with world.runtime.sessions() as session:
        found = await list_jobs(session)
    return [JobRow(job.id, job.memory_id, job.status, job.attempts) for job in found]


def liz_facts(*args: str, database_url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "liz", "facts", *args],
        cwd=cwd,
        env={**os.environ, "DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_a_users_messages_said_in_a_row_are_all_learned_right_away_in_order(
    world: World, engine: AsyncEngine
) -> None:
    said = ["I keep bees", "Olives taste awful", "My dog is Rex", "Turku is home", "Nights suit me"]
    for text in said:  # each turn comes while the earlier ones are still being learned
        res = await world.say("ann", text)
        assert res.reply is not None
    await world.settle()  # no clock time passes: no poll of the queue helps
    assert world.brain.learned_from == said
    assert sorted(await world.facts_of("ann")) == sorted(fact_text(text) for text in said)
    assert sorted((await learned_counts(engine)).values()) == [1] * len(said)
    assert await backlog_of(world) == {"pending": 0, "failed": 0, "oldestPendingSeconds": None}


async def test_a_message_that_crashes_the_model_is_set_aside_while_others_learn(
    world: World, database_url: str, tmp_path: Path
) -> None:
    # The endpoint fails with a server error on this one message only, every time.
    world.brain.broken = {"poison"}
    await world.say("ann", "ann poison pill")
    await world.say("ann", "I grow tomatoes")  # behind it in ann's queue
    await world.settle()
    bob_says = ["I keep bees", "Olives taste awful", "My dog is Rex", "Turku is home"]
    for text in bob_says:  # bob is learned from all along: the endpoint is up
        await world.say("bob", text)
        await world.settle()
        await world.later(hours=1)
    # ann's later message is not held up for good, and the poisoned one is set aside.
    assert await world.facts_of("ann") == [fact_text("I grow tomatoes")]
    assert await backlog_of(world) == {"pending": 0, "failed": 1, "oldestPendingSeconds": None}
    (stuck,) = [job for job in await jobs_of(world) if job.status == "failed"]

    app = create_app(world.framework, {AGENT: world.agent})
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost"
    ) as client:
        (aside,) = (await client.get("/health")).json()["setAside"]
    assert aside["id"] == stuck.id and aside["userId"] == "ann"
    assert "answered 500" in aside["reason"]

    def facts_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return liz_facts(*args, database_url=database_url, cwd=tmp_path)

    listed = facts_cli("queue", "--failed")
    assert f"#{stuck.id}" in listed.stdout and "answered 500" in listed.stdout
    unknown = facts_cli("retry", "999")
    assert unknown.returncode == 2
    assert "job 999 is not in the queue" in unknown.stderr
    assert await jobs_of(world) == [stuck]  # nothing was changed
    back = facts_cli("retry", str(stuck.id))
    assert back.returncode == 0, back.stderr
    assert "1 job due now" in back.stdout
    world.brain.broken = set()  # the model takes it at last
    await world.later(seconds=1)
    assert sorted(await world.facts_of("ann")) == sorted(
        [fact_text("ann poison pill"), fact_text("I grow tomatoes")]
    )
    assert await backlog_of(world) == {"pending": 0, "failed": 0, "oldestPendingSeconds": None}


async def test_on_a_quiet_server_a_message_failing_with_a_500_every_time_is_set_aside(
    world: World,
) -> None:
    # No other user: the only messages learned are this user's own, behind the bad one.
    world.brain.broken = {"poison"}
    await world.say("ann", "ann poison pill")
    healthy = ["I grow tomatoes", "My dog is Rex", "Turku is home"]
    for text in healthy:
        await world.say("ann", text)
    await world.settle()
    for _ in range(6):
        await world.later(hours=1)
    assert sorted(await world.facts_of("ann")) == sorted(fact_text(text) for text in healthy)
    assert await backlog_of(world) == {"pending": 0, "failed": 1, "oldestPendingSeconds": None}
    await world.say("ann", "Nights suit me")  # and the user's next message goes on
    await world.settle()
    await world.later(hours=1)
    assert fact_text("Nights suit me") in await world.facts_of("ann")


async def test_when_every_call_fails_with_a_500_nothing_is_set_aside(world: World) -> None:
    world.brain.broken = {"user:"}  # every extraction prompt: a real outage
    for text in ["I grow tomatoes", "My dog is Rex", "Turku is home"]:
        await world.say("ann", text)
    await world.settle()
    for _ in range(6):
        await world.later(hours=1)
    assert await backlog_of(world) == {
        "pending": 3,
        "failed": 0,
        "oldestPendingSeconds": (await backlog_of(world))["oldestPendingSeconds"],
    }
    world.brain.broken = set()
    await world.later(hours=2)
    assert len(await world.facts_of("ann")) == 3
