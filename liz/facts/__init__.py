"""Long-term facts about each user (mem0-style), apart from Liz's conversation log.

``store.FactStore`` is the entry point; each module below does one job for it and
takes the values it needs (no module calls back into the store):

- ``domain``: the vocabulary (Scope, Fact, Event, Change, WriteContext, errors)
- ``extraction`` / ``reconcile``: the two LLM calls; ``llm_answers``: what they must answer
- ``learning``: an add (dedupe, find similar, reconcile); ``batch``: explicit operations
- ``commit``: one transaction per write plan, with history rows
- ``queries``: reads; ``search``: hybrid search; ``reindex``: re-embedding
- ``index``: the vector and keyword index, one backend per database behind one protocol
- ``tables``: the SQLAlchemy tables; ``settings``: ``LIZ_FACTS_*``
- ``http`` and ``cli``: the routes under ``/agents/{agentId}/users/{userId}/facts`` and
  ``liz facts``
"""
