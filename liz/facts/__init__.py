"""Long-term facts about each user (mem0-style), apart from Liz's conversation log.

``store.FactStore`` is the entry point. ``extraction`` and ``reconcile`` are the two
LLM calls; ``learning`` and ``batch`` plan writes; ``storage`` is the one contract
with the database, kept by ``sqlite`` and ``postgres`` (all their SQL lives there,
beside the portable reads of ``queries`` and the write rows of ``writes``);
``search`` fuses vector and keyword rankings. docs/architecture.md walks one fact
through them.
"""
