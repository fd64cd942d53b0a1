"""``LIZ_SCRIPTED_LLM=true``: liz's scripted model stands in for the LLM, in-process.

This is the one switch every entry point shares (``liz serve``, ``chat``, ``twitter``,
``facts``, ``liz.asgi:app_from_env``, an ``App`` in a script): they all build their LLM
with :func:`liz.runtime.bootstrap.llm_from_settings`, which comes here. The ``openai`` SDK reaches
the scripted model through httpx's ASGI transport, so there is no port, thread or server
log of its own. Its calls are recorded under the model name :data:`SCRIPTED_MODEL`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from liz.errors import UsageError
from liz.llm.endpoint import set_llm_variables

if TYPE_CHECKING:
    from liz.config import Settings
    from liz.llm.client import LLMClient

SCRIPTED_MODEL = "scripted"
# What a command prints (once) when it runs on the scripted model.
SCRIPTED_NOTICE = (
    "no LLM key: liz's scripted model answers (replies start with [scripted reply]; "
    "`call TOOL {json}` calls a tool)"
)


def scripted_client(settings: Settings) -> LLMClient:
    """An LLM client on the scripted model; refused when a real LLM is configured too."""
    from liz.prompts.templates import PromptTemplates
    from liz.testing.scripted_model import scripted_model

    check_scripted_alone(settings)
    return scripted_model().llm_client(
        small_model=SCRIPTED_MODEL,
        large_model=SCRIPTED_MODEL,
        embedding_model=SCRIPTED_MODEL,
        max_retries=0,
        timeout=settings.liz_llm_timeout,
        structured_mode=settings.liz_structured_output,
        templates=PromptTemplates(settings.liz_prompts_dir),
    )


def check_scripted_alone(settings: Settings) -> None:
    """A configured key or base URL always wins: asking for the scripted model too is refused."""
    named = set_llm_variables(settings)
    if named:
        raise UsageError(
            f"the scripted model is never used with a real LLM configured: unset "
            f"{' and '.join(named)}, or drop --scripted / LIZ_SCRIPTED_LLM"
        )
