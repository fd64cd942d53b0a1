"""FactStore.add: every event type and every robustness rule, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest
from sqlalchemy import text

from liz.db.engine import create_engine, make_sessionmaker
from liz.errors import InputError, StorageError
from liz.facts.domain import Event, ExtraStatement, ExtraStatementMismatch
from liz.facts.store import FactStore
from liz.llm import LLMClient, LLMOutputError
from liz.testing.clock import ManualClock
from liz.testing.openai_server import ScriptedOpenAI
from tests.fixtures.facts import (
    AGENT,
    USER,
    decision,
    extraction,
    fact,
    plan,
    seed,
)

pytestmark = pytest.mark.anyio


def texts(facts: list) -> list[str]:  # type: ignore[type-arg]
    return sorted(f.text for f in facts)


async def test_new_facts_with_nothing_similar_are_added_without_a_reconcile_call(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    scripted.reply(
        extraction(
            fact("User's name is Ada", "user", "identity", "name"),
            fact("User prefers green tea", "user", "preferences", "drinks"),
        )
    )
    events = await store.add(
        [
            {"role": "user", "content": "I'm Ada and I love green tea"},
            {"role": "assistant", "content": "Nice to meet you, Ada!"},
        ],
        AGENT,
        USER,
    )
    assert [e.event for e in events] == [Event.ADD, Event.ADD]
    assert texts(await store.list(AGENT, USER)) == ["User prefers green tea", "User's name is Ada"]
    assert [r.schema_name for r in scripted.chat_requests] == ["ExtractedFacts"]
    assert "I'm Ada and I love green tea" in scripted.chat_requests[0].prompt
    stored = await store.get(events[0].fact_id, AGENT, USER)
    assert stored is not None and stored.categories == ("identity", "name")


async def test_nothing_worth_keeping_changes_nothing(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    scripted.reply(extraction())
    assert await store.add("hello there", AGENT, USER) == []
    assert await store.list(AGENT, USER) == []


async def test_exact_duplicate_is_dropped_before_any_reconcile_call(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    (ada,) = await seed(store, scripted, fact("User's name is Ada"))
    scripted.reply(extraction(fact("user's name is  ADA.")))
    events = await store.add("Did I tell you my name is Ada?", AGENT, USER)
    assert [(e.event, e.fact_id) for e in events] == [(Event.NOOP, ada)]
    assert [r.schema_name for r in scripted.chat_requests] == ["ExtractedFacts", "ExtractedFacts"]
    assert len(await store.list(AGENT, USER)) == 1


async def test_update_keeps_the_id_and_records_old_and_new_text(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    (tea,) = await seed(store, scripted, fact("User likes tea"))
    scripted.reply(
        extraction(fact("User likes green tea in the morning")),
        plan(decision(1, "UPDATE", 1, "User likes green tea, mostly in the morning")),
    )
    events = await store.add("I like green tea in the morning", AGENT, USER)
    assert [(e.event, e.fact_id) for e in events] == [(Event.UPDATE, tea)]
    assert texts(await store.list(AGENT, USER)) == ["User likes green tea, mostly in the morning"]
    history = await store.history(tea, AGENT, USER)
    assert [(h.event, h.old_text, h.new_text) for h in history] == [
        (Event.ADD, None, "User likes tea"),
        (Event.UPDATE, "User likes tea", "User likes green tea, mostly in the morning"),
    ]
    reconcile = scripted.chat_requests[-1]
    assert reconcile.schema_name == "ReconcilePlan"
    assert "1. [user] User likes tea" in reconcile.prompt
    assert tea not in reconcile.prompt  # the model sees short ids only


async def test_contradiction_retires_the_old_fact_and_adds_the_new_in_one_add(
    store: FactStore, scripted: ScriptedOpenAI, clock: ManualClock
) -> None:
    (paris,) = await seed(store, scripted, fact("User lives in Paris"))
    before = await clock.advance(minutes=1)
    await clock.advance(minutes=1)
    scripted.reply(
        extraction(fact("User lives in Berlin now")),
        plan(decision(1, "DELETE", 1, "User lives in Berlin now")),
    )
    events = await store.add("I moved to Berlin", AGENT, USER)
    assert [e.event for e in events] == [Event.DELETE, Event.ADD]
    assert events[0].fact_id == paris
    assert texts(await store.list(AGENT, USER)) == ["User lives in Berlin now"]
    old = await store.get(paris, AGENT, USER)
    assert old is not None and old.retired_at is not None and old.invalid_from is not None
    assert old.text == "User lives in Paris"  # retired, not erased
    assert [h.event for h in await store.history(paris, AGENT, USER)] == [Event.ADD, Event.DELETE]
    assert texts(await store.as_of(before, AGENT, USER)) == ["User lives in Paris"]
    (then,) = await store.as_of(before, AGENT, USER)
    assert then.active and then.invalid_from is None  # its retirement came later


async def test_noop_writes_nothing(store: FactStore, scripted: ScriptedOpenAI) -> None:
    (cats,) = await seed(store, scripted, fact("User has two cats"))
    scripted.reply(extraction(fact("User owns two cats")), plan(decision(1, "NOOP", 1)))
    events = await store.add("my two cats say hi", AGENT, USER)
    assert [(e.event, e.fact_id) for e in events] == [(Event.NOOP, cats)]
    assert texts(await store.list(AGENT, USER)) == ["User has two cats"]
    assert len(await store.history(cats, AGENT, USER)) == 1


async def test_an_operation_on_an_id_never_shown_is_ignored_and_logged(
    store: FactStore, scripted: ScriptedOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    (coffee,) = await seed(store, scripted, fact("User drinks coffee daily"))
    scripted.reply(
        extraction(fact("User drinks coffee with oat milk")),
        plan(decision(1, "UPDATE", 7, "User drinks coffee with oat milk")),
    )
    with caplog.at_level(logging.WARNING, logger="liz.facts.reconcile"):
        events = await store.add("oat milk in my coffee please", AGENT, USER)
    assert "id 7, which the model was not shown" in caplog.text
    assert [e.event for e in events] == [Event.ADD]  # the new fact is kept, not lost
    assert texts(await store.list(AGENT, USER)) == [
        "User drinks coffee daily",
        "User drinks coffee with oat milk",
    ]
    assert len(await store.history(coffee, AGENT, USER)) == 1


async def test_a_new_fact_the_plan_forgets_is_still_added(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    await seed(store, scripted, fact("User plays chess"))
    scripted.reply(
        extraction(fact("User plays chess online"), fact("User plays piano")),
        plan(decision(1, "UPDATE", 1, "User plays chess online")),
    )
    await store.add("I play chess online, and piano", AGENT, USER)
    assert texts(await store.list(AGENT, USER)) == ["User plays chess online", "User plays piano"]


async def test_a_contradiction_cannot_retire_a_fact_about_another_subject(
    store: FactStore, scripted: ScriptedOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    (sister,) = await seed(
        store, scripted, fact("User's sister Mia lives in Oslo", "user's sister Mia")
    )
    scripted.reply(
        extraction(fact("User lives in Oslo now", "user")),
        plan(decision(1, "DELETE", 1, "User lives in Oslo now")),
    )
    with caplog.at_level(logging.WARNING, logger="liz.facts.reconcile"):
        events = await store.add("I moved to Oslo too", AGENT, USER)
    assert "refused DELETE" in caplog.text
    assert [e.event for e in events] == [Event.ADD]
    assert texts(await store.list(AGENT, USER)) == [
        "User lives in Oslo now",
        "User's sister Mia lives in Oslo",
    ]
    sister_fact = await store.get(sister, AGENT, USER)
    assert sister_fact is not None and sister_fact.active


@pytest.mark.parametrize(
    "bad_answer",
    ["this is not JSON", "", '{"facts": [{"text": "User is 30"}]}'],
    ids=["malformed-json", "empty-answer", "wrong-schema"],
)
async def test_unusable_extraction_is_retried_with_the_error_then_changes_nothing(
    store: FactStore, scripted: ScriptedOpenAI, bad_answer: str
) -> None:
    scripted.reply(bad_answer, bad_answer)
    with pytest.raises(LLMOutputError):
        await store.add("I'm 30", AGENT, USER)
    assert await store.list(AGENT, USER) == []
    retry = scripted.chat_requests[1]
    assert "Your last answer could not be used" in retry.prompt
    expected = {
        "malformed-json": "Invalid JSON",
        "empty-answer": "empty",
        "wrong-schema": "Field required",
    }
    assert any(word in retry.prompt for word in expected.values())


async def test_a_repaired_answer_on_the_retry_is_used(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    scripted.reply("{not json", extraction(fact("User is 30 years old")))
    await store.add("I'm 30", AGENT, USER)
    assert texts(await store.list(AGENT, USER)) == ["User is 30 years old"]


async def test_unusable_reconcile_answer_leaves_the_store_unchanged(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    (tea,) = await seed(store, scripted, fact("User likes tea"))
    one_category = plan(decision(1, "UPDATE", 1, "User likes black tea", categories=("drinks",)))
    scripted.reply(extraction(fact("User likes black tea")), one_category, one_category)
    with pytest.raises(LLMOutputError):
        await store.add("black tea for me", AGENT, USER)
    assert "2 to 5 categories" in scripted.chat_requests[-1].prompt
    assert texts(await store.list(AGENT, USER)) == ["User likes tea"]
    assert len(await store.history(tea, AGENT, USER)) == 1


async def test_concurrent_adds_for_one_user_store_a_fact_once(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    scripted.reply(*[extraction(fact("User's name is Ada"))] * 4)
    results = await asyncio.gather(*[store.add(f"I'm Ada ({n})", AGENT, USER) for n in range(4)])
    events = sorted(e.event for batch in results for e in batch)
    assert events == [Event.ADD, Event.NOOP, Event.NOOP, Event.NOOP]
    assert texts(await store.list(AGENT, USER)) == ["User's name is Ada"]


async def test_concurrent_contradictions_leave_one_consistent_answer(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    await seed(store, scripted, fact("User lives in Paris"))

    def answer(request):  # type: ignore[no-untyped-def]
        if request.schema_name == "ExtractedFacts":
            city = "Rome" if "Rome" in request.prompt else "Berlin"
            return extraction(fact(f"User lives in {city}"))
        city = (
            "Rome" if "] User lives in Rome" in request.prompt.split("New facts")[1] else "Berlin"
        )
        return plan(decision(1, "DELETE", 1, f"User lives in {city}"))

    scripted.respond_with(answer)
    await asyncio.gather(
        store.add("I moved to Berlin", AGENT, USER), store.add("I moved to Rome", AGENT, USER)
    )
    active = await store.list(AGENT, USER)
    assert len(active) == 1 and active[0].text in ("User lives in Berlin", "User lives in Rome")
    everything = await store.list(AGENT, USER, include_retired=True)
    assert texts(everything) == [
        "User lives in Berlin",
        "User lives in Paris",
        "User lives in Rome",
    ]


async def test_a_database_failure_is_a_storage_error_that_says_what_to_check(
    empty_database_url: str, llm: LLMClient, clock: ManualClock
) -> None:
    engine = create_engine(empty_database_url)
    try:
        unmigrated = FactStore(make_sessionmaker(engine), llm, engine=engine, clock=clock)
        attempts: list[Callable[[], Awaitable[object]]] = [
            lambda: unmigrated.list(AGENT, USER),
            lambda: unmigrated.get("some-id", AGENT, USER),
            lambda: unmigrated.history("some-id", AGENT, USER),
            lambda: unmigrated.search("tea", AGENT, USER),
            lambda: unmigrated.apply([{"op": "add", "text": "User likes tea"}], AGENT, USER),
        ]
        for attempt in attempts:
            with pytest.raises(StorageError) as raised:
                await attempt()
            assert "database" in raised.value.message or "pgvector" in raised.value.message
    finally:
        await engine.dispose()


async def test_a_list_page_out_of_range_is_refused(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    await seed(store, scripted, fact("User likes tea"))
    for limit, offset in ((0, 0), (-1, 0), (10, -1)):
        with pytest.raises(InputError, match="limit must be at least 1"):
            await store.list(AGENT, USER, limit=limit, offset=offset)
    assert texts(await store.list(AGENT, USER)) == ["User likes tea"]


async def test_extra_statements_run_after_the_facts_in_their_transaction(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    # It finds the fact the same transaction just wrote: it runs after the write.
    mark = ExtraStatement(
        text("UPDATE \"Fact\" SET subject = 'marked' WHERE text = 'User keeps bees'"),
        expected_rows=1,
    )
    scripted.reply(extraction(fact("User keeps bees")))
    await store.add("I keep bees", AGENT, USER, also=[mark])
    assert [(f.text, f.subject) for f in await store.list(AGENT, USER)] == [
        ("User keeps bees", "marked")
    ]


async def test_extra_statements_run_when_there_is_nothing_to_write(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    missing = ExtraStatement(text('DELETE FROM "FactHistory" WHERE id = -1'), expected_rows=1)
    scripted.reply(extraction())
    with pytest.raises(ExtraStatementMismatch):
        await store.add("hello", AGENT, USER, also=[missing])
    (tea,) = await seed(store, scripted, fact("User likes tea"))
    scripted.reply(extraction(fact("User likes tea")))  # known already: nothing to write
    with pytest.raises(ExtraStatementMismatch):
        await store.add("I like tea", AGENT, USER, also=[missing])
    assert [f.id for f in await store.list(AGENT, USER)] == [tea]
