"""Searches at the same moment share embedding requests, and each still gets its own answer."""

from __future__ import annotations

import asyncio

import pytest

from liz.errors import LLMError
from liz.facts.store import FactStore
from liz.testing.openai_server import ScriptedOpenAI
from tests.fixtures.facts import AGENT, USER, fact, seed

pytestmark = pytest.mark.anyio

FACTS = (
    "User likes hiking in the mountains",
    "User works as a nurse at night",
    "User owns a red bicycle",
    "User's sister Mia lives in Oslo",
)
QUERIES = ("mountains hiking trip", "night shift nurse", "red bicycle repair", "sister in Oslo")


async def _seeded(store: FactStore, scripted: ScriptedOpenAI) -> None:
    await seed(store, scripted, *(fact(text) for text in FACTS))


async def test_concurrent_searches_share_requests_and_each_gets_its_own_facts(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    await _seeded(store, scripted)
    alone = [await store.search(query, AGENT, USER, limit=1) for query in QUERIES]
    before = len(scripted.embedding_requests)

    together = await asyncio.gather(
        *(store.search(query, AGENT, USER, limit=1) for query in QUERIES)
    )

    assert [[f.text for f in found] for found in together] == [
        [f.text for f in found] for found in alone
    ]
    assert [found[0].text for found in together] == list(FACTS)
    requests = scripted.embedding_requests[before:]
    assert len(requests) < len(QUERIES)
    assert sorted(text for request in requests for text in request.inputs) == sorted(QUERIES)


async def test_a_shared_request_the_endpoint_refuses_is_sent_again_text_by_text(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    await _seeded(store, scripted)
    before = len(scripted.embedding_requests)
    scripted.fail_next(400)  # as for a text too long for the model

    together = await asyncio.gather(
        *(store.search(query, AGENT, USER, limit=1) for query in QUERIES)
    )

    assert [found[0].text for found in together] == list(FACTS)
    sizes = [len(request.inputs) for request in scripted.embedding_requests[before:]]
    assert sizes[0] > 1 and sizes[1:] == [1] * sizes[0]


async def test_when_the_endpoint_is_down_every_waiting_search_fails_and_none_hangs(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    await _seeded(store, scripted)
    scripted.fail_next(503, times=20)

    outcomes = await asyncio.wait_for(
        asyncio.gather(
            *(store.search(query, AGENT, USER) for query in QUERIES), return_exceptions=True
        ),
        timeout=30,
    )

    assert all(isinstance(outcome, LLMError) for outcome in outcomes), outcomes
    assert all("503" in str(outcome) for outcome in outcomes)


async def test_a_search_given_up_while_waiting_leaves_the_others_their_answers(
    store: FactStore, scripted: ScriptedOpenAI
) -> None:
    await _seeded(store, scripted)
    searches = [
        asyncio.ensure_future(store.search(query, AGENT, USER, limit=1)) for query in QUERIES
    ]
    await asyncio.sleep(0)  # every search has asked for its query's embedding
    searches[1].cancel()

    outcomes = await asyncio.gather(*searches, return_exceptions=True)

    assert isinstance(outcomes[1], asyncio.CancelledError)
    assert [outcomes[i][0].text for i in (0, 2, 3)] == [FACTS[0], FACTS[2], FACTS[3]]  # type: ignore[index]
    # The store goes on answering afterwards.
    assert [f.text for f in await store.search(QUERIES[1], AGENT, USER, limit=1)] == [FACTS[1]]
