"""Re-embedding stored facts with the current embedding model (``liz facts reindex``)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from liz.facts.index.protocol import FactIndex
from liz.facts.tables import FactRecord
from liz.facts.vectors import embed, for_storage
from liz.llm import LLMClient

BATCH = 256


async def reindex_facts(
    sessions: async_sessionmaker[AsyncSession],
    index: FactIndex,
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
        conditions.append(FactRecord.agent_id == agent_id)
    if user_id is not None:
        conditions.append(FactRecord.user_id == user_id)
    if not everything:
        conditions.append(
            or_(FactRecord.embedding_model != model, FactRecord.embedding_dim != dimension)
        )
    async with sessions() as session:
        ids = list(
            await session.scalars(select(FactRecord.id).where(*conditions).order_by(FactRecord.id))
        )
        total = len(ids)
    await index.prepare_dimension(dimension)
    done = 0
    if progress is not None:
        progress(done, total)
    for start in range(0, total, BATCH):
        chunk = ids[start : start + BATCH]
        async with sessions() as session:
            rows = await session.execute(
                select(FactRecord.id, FactRecord.text).where(FactRecord.id.in_(chunk))
            )
            texts: dict[str, str] = {row[0]: row[1] for row in rows}
        # Embedded outside the write transaction: no lock is held while the model works.
        vectors = dict(zip(texts, await embed(llm, list(texts.values())), strict=True))
        async with sessions() as session, session.begin():
            records = list(
                await session.scalars(
                    select(FactRecord).where(FactRecord.id.in_(chunk)).with_for_update()
                )
            )
            for record in records:
                if record.text != texts.get(record.id):
                    continue  # changed meanwhile: that change embedded it already
                record.embedding = for_storage(vectors[record.id], dialect)
                record.embedding_model = model
                record.embedding_dim = dimension
        index.invalidate({(r.agent_id, r.user_id) for r in records})
        done += len(chunk)
        if progress is not None:
            progress(done, total)
    return total
