"""New facts' ids grow with time (UUID version 7), on PostgreSQL as on SQLite: a fact
added later sorts after one added earlier, and every id is still a distinct UUID."""

from __future__ import annotations

import uuid

import anyio
import pytest

from liz.facts.domain import ItemStatus
from liz.facts.store import FactStore
from tests.fixtures.facts import AGENT, USER

pytestmark = [pytest.mark.anyio]


async def test_facts_added_one_after_another_get_ids_in_the_order_they_were_added(
    store: FactStore,
) -> None:
    ids = []
    for number in range(5):
        (result,) = await store.apply(
            [
                {
                    "op": "add",
                    "text": f"User owns {number + 2} bicycles",
                    "categories": ["bikes", "x"],
                }
            ],
            AGENT,
            USER,
        )
        assert result.status is ItemStatus.APPLIED and result.fact_id is not None
        ids.append(result.fact_id)
        await anyio.sleep(0.002)  # ids made within one millisecond need not be ordered
    assert ids == sorted(ids)
    assert {uuid.UUID(fact_id).version for fact_id in ids} == {7}
    listed = await store.list(AGENT, USER)
    assert sorted(fact.id for fact in listed) == ids


async def test_many_facts_added_at_once_each_get_their_own_id(store: FactStore) -> None:
    texts = [f"User planted tree number {number}" for number in range(200)]
    results = await store.apply(
        [{"op": "add", "text": text, "categories": ["trees", "garden"]} for text in texts],
        AGENT,
        USER,
    )
    ids = [result.fact_id for result in results]
    assert all(result.status is ItemStatus.APPLIED for result in results)
    assert len(set(ids)) == len(texts)
    assert len(await store.list(AGENT, USER, limit=500)) == len(texts)
