"""Keep the turn in the conversation log: the input before the reply, then the reply.

The input is stored before any LLM call, so an outage never loses it; the reply
after the rest of the chain has produced it. Route handlers only produce text.

When the runtime keeps facts, the job of learning from the input is queued in the
input's own transaction (durable learning: a crash, an outage or a full disk loses
neither), and made due when the turn ends: with the reply stored beside it, or
without one when the reply failed. Dry runs, the framework's own inputs (scheduled
posts) and inputs without text teach nothing.

A caller may name the input's id beforehand (``req.input_memory_id``: a request with an
``Idempotency-Key``); when an input with that id is stored already, a first try failed
after storing it, and this turn only adds the reply: the input and its learning job
are never stored twice.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from liz.db.driver import Bound, connect
from liz.db.memories import insert_statement, memory_stored, store_memory
from liz.db.usage import usage_statements
from liz.learning_queue import jobs
from liz.pipeline import AgentRequest, AgentResponse
from liz.types import Generator, InputSource, Memory, Next

logger = logging.getLogger(__name__)


async def create_memory(req: AgentRequest, res: AgentResponse, next: Next) -> None:
    content: dict[str, Any] = {"text": req.input.text or ""}
    if req.input.image_urls:
        content["imageUrls"] = req.input.image_urls
    said = _memory(req, content, req.input.type.value, "external")
    learn = _learnable(req)
    engine = req.runtime.engine
    stored = False
    if req.input_memory_id is not None and not req.dry_run:
        said = said.model_copy(update={"id": req.input_memory_id})
        stored = await memory_stored(engine, said.id)
    if stored:
        pass  # stored by a first try, with its learning job
    elif learn:
        # Until the turn ends the reply may still come; after a crash it never will.
        wait = timedelta(seconds=req.runtime.learning.settings.reply_wait_seconds)
        queued = jobs.enqueue_statement(said, req.agent.name, due=said.created_at + wait)
        async with connect(engine) as db:
            await db.commit(insert_statement(said), queued)
    elif not req.dry_run:
        await store_memory(engine, said)
    if not req.dry_run:
        req.input_memory_id = said.id
    try:
        await next()
    except Exception:
        if learn:
            await _learn_without_reply(req, said)
        raise
    if req.dry_run:
        return
    if res.reply is None:
        if learn:
            await _learn_without_reply(req, said)
        return
    reply = _memory(req, {"text": res.reply.text, **res.memory_extras}, res.kind, "llm")
    # The turn's token usage so far is kept in the reply's own transaction.
    usage = res.trace.usage
    spent = usage_statements(
        usage.unstored(), agent_id=reply.agent_id, user_id=reply.user_id, at=reply.created_at
    )
    # A caller's own rows for this reply (a connector's outbox), committed with it.
    theirs = [] if res.with_reply is None else list(res.with_reply(res.reply))
    if not learn and not spent and not theirs:
        await store_memory(engine, reply)
        return
    statements = [insert_statement(reply)]
    if learn:
        statements.append(_turn_over(req, said, reply.id))
    # Usage rows are only appended (liz.db.usage): no other transaction waits on them.
    statements.extend(spent)
    statements.extend(theirs)
    async with connect(engine) as db:
        await db.commit(*statements)
    usage.stored = len(usage.calls)
    res.stored_with_reply = res.with_reply is not None


def _learnable(req: AgentRequest) -> bool:
    """Whether the input teaches facts: a real user said something, and facts are kept."""
    return (
        req.runtime.facts is not None
        and not req.dry_run
        and req.input.source is not InputSource.INTERNAL
        and bool((req.input.text or "").strip())
    )


def _turn_over(req: AgentRequest, said: Memory, reply_id: str | None) -> Bound:
    """The statement making the turn's job (and the user's burst) due: see
    ``jobs.reply_came_statement``."""
    settings = req.runtime.learning.settings
    return jobs.reply_came_statement(
        said,
        reply_id,
        req.runtime.clock.now(),
        idle_seconds=settings.learn_after_idle,
        batch=settings.batch_size,
    )


async def _learn_without_reply(req: AgentRequest, said: Memory) -> None:
    """The reply failed: learn from the input alone, when the LLM is back."""
    try:
        async with connect(req.runtime.engine) as db:
            await db.commit(_turn_over(req, said, None))
    except Exception as exc:  # the job stays queued and becomes due after the reply wait
        logger.warning("could not mark message %s ready for learning: %s", said.id, exc)
        return
    req.runtime.learning.wake()


def _memory(req: AgentRequest, content: dict[str, Any], type: str, by: Generator) -> Memory:
    return Memory(
        user_id=req.input.user_id,
        agent_id=req.input.agent_id,
        room_id=req.input.room,
        content=content,
        type=type,
        generator=by,
        created_at=req.runtime.clock.now(),
    )
