"""FactStore.apply / update / delete: explicit operations, checked item by item."""

from __future__ import annotations

import pytest

from liz.errors import InputError, NotFound
from liz.facts.domain import Event, ItemStatus
from liz.facts.store import FactStore
from liz.testing.openai_server import ScriptedOpenAI
from tests.fixtures.facts import AGENT, USER, fact, seed

pytestmark = pytest.mark.anyio


async def test_a_mixed_batch_applies_the_good_items_and_says_why_the_rest_were_refused(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    tea, chess = await seed(store, scripted, fact("User likes tea"), fact("User plays chess"))
    results = await store.apply(
        [
            {"op": "add", "text": "User speaks Finnish", "categories": ["language", "skills"]},
            {"op": "update", "id": tea, "text": "User likes oolong tea"},
            {"op": "delete", "id": "no-such-fact"},
            {"op": "add", "text": "   "},
            {"op": "update", "id": chess, "text": "User plays chess weekly"},
            {"op": "delete", "id": chess},
            {"op": "add", "text": "user plays CHESS."},
            {"op": "rename", "id": tea},
        ],
        AGENT,
        USER,
    )
    statuses = [(r.status, r.reason) for r in results]
    assert [s for s, _ in statuses] == [
        ItemStatus.APPLIED,
        ItemStatus.APPLIED,
        ItemStatus.REFUSED,
        ItemStatus.REFUSED,
        ItemStatus.REFUSED,
        ItemStatus.REFUSED,
        ItemStatus.DUPLICATE,
        ItemStatus.REFUSED,
    ]
    assert "no active fact with id 'no-such-fact'" in statuses[2][1]
    assert "non-empty text" in statuses[3][1]
    assert "more than one item" in statuses[4][1] and "more than one item" in statuses[5][1]
    assert results[6].fact_id == chess
    assert "op" in statuses[7][1]
    active = sorted(f.text for f in await store.list(AGENT, USER))
    assert active == ["User likes oolong tea", "User plays chess", "User speaks Finnish"]
    finnish = next(f for f in await store.list(AGENT, USER) if "Finnish" in f.text)
    assert finnish.categories == ("language", "skills")
    history = await store.history(tea, AGENT, USER)
    assert [(h.event, h.actor) for h in history] == [(Event.ADD, "llm"), (Event.UPDATE, "api")]


async def test_an_exact_duplicate_is_reported_with_its_id_and_nothing_is_written(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    (tea,) = await seed(store, scripted, fact("User likes tea"))
    (result,) = await store.apply([{"op": "add", "text": "User likes tea."}], AGENT, USER)
    assert (result.status, result.fact_id) == (ItemStatus.DUPLICATE, tea)
    assert len(await store.list(AGENT, USER)) == 1
    assert len(await store.history(tea, AGENT, USER)) == 1


async def test_wrong_category_counts_are_refused(store: FactStore) -> None:
    (result,) = await store.apply(
        [{"op": "add", "text": "User likes tea", "categories": ["drinks"]}], AGENT, USER
    )
    assert result.status is ItemStatus.REFUSED and "2 to 5" in result.reason
    assert await store.list(AGENT, USER) == []


async def test_delete_retires_the_fact_and_keeps_its_history(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    (tea,) = await seed(store, scripted, fact("User likes tea"))
    await store.delete(tea, AGENT, USER, reason="user asked to forget")
    assert await store.list(AGENT, USER) == []
    assert await store.search("tea", AGENT, USER) == []
    retired = await store.get(tea, AGENT, USER)
    assert retired is not None and not retired.active and retired.text == "User likes tea"
    last = (await store.history(tea, AGENT, USER))[-1]
    assert (last.event, last.old_text, last.reason) == (
        Event.DELETE,
        "User likes tea",
        "user asked to forget",
    )
    with pytest.raises(NotFound):
        await store.delete(tea, AGENT, USER)  # already retired


async def test_update_with_empty_text_is_refused(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    (tea,) = await seed(store, scripted, fact("User likes tea"))
    with pytest.raises(InputError, match="non-empty text"):
        await store.update(tea, "", AGENT, USER)
    updated = await store.update(tea, "User likes mint tea", AGENT, USER)
    assert updated.status is ItemStatus.APPLIED
    assert [f.text for f in await store.search("mint", AGENT, USER)] == ["User likes mint tea"]


async def test_a_fact_deleted_and_added_again_in_one_batch_stays_known(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    (tea,) = await seed(store, scripted, fact("User likes tea"))
    deleted, added = await store.apply(
        [{"op": "delete", "id": tea}, {"op": "add", "text": "User likes tea"}], AGENT, USER
    )
    assert (deleted.status, added.status) == (ItemStatus.APPLIED, ItemStatus.APPLIED)
    assert added.fact_id != tea
    assert [f.id for f in await store.list(AGENT, USER)] == [added.fact_id]


async def test_a_text_too_long_for_one_fact_is_refused(store: FactStore) -> None:
    (result,) = await store.apply(
        [{"op": "add", "text": "User likes " + "tea " * 300}], AGENT, USER
    )
    assert result.status is ItemStatus.REFUSED and "at most 1000 characters" in result.reason
    assert await store.list(AGENT, USER) == []
