"""What a client of the HTTP API is told when the LLM endpoint answers with an error.

The provider's own words go to the server log only: they can echo part of the API
key (OpenAI's 401 does), name an organisation or a project, or an internal host.
The client gets our own sentence instead, saying what went wrong and what fixes it,
from the status alone; the request id it is also given finds the rest in the log.
"""

from __future__ import annotations

import math

SETTINGS_OF_MODELS = "LIZ_SMALL_MODEL, LIZ_LARGE_MODEL, LIZ_EMBEDDING_MODEL"


def endpoint_error(status: int, model: str, retry_after: float | None = None) -> str:
    """The client's sentence for the endpoint answering ``status`` to a call of ``model``
    (``retry_after``: the seconds it asked us to wait, if it did).

    For a 401: "the LLM endpoint refused the API key (it answered 401, model gpt-4o):
    check OPENAI_API_KEY or OPENROUTER_API_KEY".
    """
    answered = f"(it answered {status}, model {model})"
    if status == 401:
        return (
            f"the LLM endpoint refused the API key {answered}: "
            "check OPENAI_API_KEY or OPENROUTER_API_KEY"
        )
    if status == 402:
        return (
            f"the LLM account cannot pay for the request {answered}: "
            "add credit with the provider, or choose a cheaper model"
        )
    if status == 403:
        return (
            f"the LLM endpoint refused the request {answered}: check that the API key "
            "may use the model, or rephrase a message the provider's policy refused"
        )
    if status == 404:
        return (
            f"the LLM endpoint does not know the model {answered}: "
            f"check {SETTINGS_OF_MODELS} and OPENAI_BASE_URL"
        )
    if status == 429:
        return f"the LLM endpoint is rate limiting requests {answered}; {_when(retry_after)}"
    if status in (408, 409) or status >= 500:
        return f"the LLM endpoint failed {answered}; {_when(retry_after)}"
    if 400 <= status < 500:
        return (
            f"the LLM endpoint refused the request {answered}: the message may be too "
            "long for the model or against the provider's policy; shorten or rephrase it"
        )
    return f"the LLM endpoint answered with an error {answered}; {_when(retry_after)}"


def _when(retry_after: float | None) -> str:
    if retry_after is None:
        return "try again later"
    return f"try again in {max(1, math.ceil(retry_after))} s"
