"""Re-embedding stored facts with the current embedding model (``liz facts reindex``)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import ColumnElement, bindparam, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.facts.queries import FACT, FACTS
from liz.facts.storage import FactStorage
from liz.facts.vectors import embed, for_storage
from liz.llm import LLMClient

BATCH = 256
_CHUNK = select(FACT.id, FACT.text, FACT.agentId, FACT.userId).where(
    FACT.id.in_(bindparam("ids", expanding=True))
)
_REEMBED = update(FACTS).where(FACT.id == bindparam("target"))


async def reindex_facts(
    sessions: async_sessionmaker[AsyncSession],
    storage: FactStorage,
    llm: LLMClient,
    dialect: str,
    agent_id: str | None,
    user_id: str | None,
    *,
    everything: bool,
    progress: Callable[[int, int], None] | None,
) -> int:
    """Re-embed facts (of one agent and/or user, or all) in batches; returns the count.

    Retired facts are re-embedded too: queries are refused while any fact of the
    scope has vectors of another model.

    Without ``everything`` only facts embedded with another model or dimension are
    touched, so an interrupted run can simply be started again.
    """
    model = llm.embedding_model
    (probe,) = await embed(llm, ["dimension probe"])
    dimension = int(probe.size)
    conditions: list[ColumnElement[bool]] = []
    if agent_id is not None:
        conditions.append(FACT.agentId == agent_id)
    if user_id is not None:
        conditions.append(FACT.userId == user_id)
    if not everything:
        conditions.append(or_(FACT.embeddingModel != model, FACT.embeddingDim != dimension))
    async with sessions() as session:
        ids = list(await session.scalars(select(FACT.id).where(*conditions).order_by(FACT.id)))
        total = len(ids)
    await storage.prepare_dimension(dimension)
    done = 0
    if progress is not None:
        progress(done, total)
    for start in range(0, total, BATCH):
        chunk = ids[start : start + BATCH]
        async with sessions() as session:
            rows = await session.execute(_CHUNK, {"ids": chunk})
            texts: dict[str, str] = {row[0]: row[1] for row in rows}
        # Embedded outside the write transaction: no lock is held while the model works.
        vectors = dict(zip(texts, await embed(llm, list(texts.values())), strict=True))
        async with sessions() as session, session.begin():
            locked = (await session.execute(_CHUNK.with_for_update(), {"ids": chunk})).all()
            # A fact changed meanwhile was embedded by that change.
            same = [row for row in locked if row[1] == texts.get(row[0])]
            if same:
                await session.execute(
                    _REEMBED,
                    [
                        {
                            "target": row[0],
                            "embedding": for_storage(vectors[row[0]], dialect),
                            "embeddingModel": model,
                            "embeddingDim": dimension,
                        }
                        for row in same
                    ],
                )
        storage.forget({(row[2], row[3]) for row in locked})
        done += len(chunk)
        if progress is not None:
            progress(done, total)
    return total
