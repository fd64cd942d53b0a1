"""Several askers' texts embedded in one request, each asker's vectors split back out.

Recall's concurrent query embeddings (liz.facts.query_vectors) and the candidate facts
of bursts learned at one beat (liz.facts.shared_embedding) share requests this way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from liz.errors import LLMError
from liz.facts.vectors import Vector, embed

if TYPE_CHECKING:
    from liz.llm import LLMClient

# The endpoint refused the request for what it carried, not for who sent it or when.
REFUSED_FOR_CONTENT = frozenset({400, 413, 422})

# One group's embeddings, or the error its request raised.
Answer = list[Vector] | Exception


async def embed_groups(llm: LLMClient, groups: Sequence[Sequence[str]]) -> list[Answer]:
    """Each group's embeddings from one request for all their texts, or the error it
    raised, so each asker raises what its own request would have. A request refused
    for what it carries (400, 413, 422) is sent again one group at a time: one group's
    texts never fail another's."""
    texts = [text for group in groups for text in group]
    if not texts:
        return [[] for _ in groups]
    try:
        vectors = await embed(llm, texts)
    except LLMError as error:
        if len(groups) > 1 and error.upstream_status in REFUSED_FOR_CONTENT:
            alone = await asyncio.gather(*(embed_groups(llm, [group]) for group in groups))
            return [answer for (answer,) in alone]
        return [error] * len(groups)
    except Exception as error:  # each asker raises it: none is left waiting
        return [error] * len(groups)
    answers: list[Answer] = []
    start = 0
    for group in groups:
        answers.append(vectors[start : start + len(group)])
        start += len(group)
    return answers
