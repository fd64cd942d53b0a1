"""Which OpenAI-compatible endpoint the settings point at: URL, key and model names.

``OPENAI_BASE_URL`` wins when set (a key is optional there, for local servers); with
only ``OPENROUTER_API_KEY`` set, requests go to OpenRouter and model names without a
provider prefix get ``openai/`` (``gpt-4o`` becomes ``openai/gpt-4o``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from openai import AsyncOpenAI, DefaultAioHttpClient
from pydantic import SecretStr

from liz.errors import UsageError

if TYPE_CHECKING:
    import httpx

    from liz.config import Settings

log = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
# Local servers (Ollama, vLLM) ignore the key, but the SDK insists on one.
KEYLESS_PLACEHOLDER = "no-key"


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint and the three model names used on it."""

    base_url: str
    api_key: str
    small_model: str
    large_model: str
    embedding_model: str
    timeout: float
    max_retries: int

    def open(self, http_client: httpx.AsyncClient | None = None) -> AsyncOpenAI:
        """An ``AsyncOpenAI`` on this endpoint; the SDK retries 408/409/429/5xx itself.

        Unless ``http_client`` is given, requests go over the SDK's aiohttp transport
        (``DefaultAioHttpClient``): its HTTP parsing is compiled, where the default
        transport's is Python, so each call costs less CPU.
        """
        return AsyncOpenAI(
            api_key=self.api_key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            # The SDK accepts httpx and httpx2 clients alike; its annotation names one.
            http_client=cast(Any, http_client or DefaultAioHttpClient()),
        )


def endpoint_from_settings(settings: Settings) -> Endpoint | None:
    """The endpoint the settings name, or None when no key and no base URL are set."""
    openai_key, openrouter_key, base_url = _given(settings).values()
    if openai_key is None and openrouter_key is None and base_url is None:
        return None
    if settings.liz_llm_timeout <= 0:
        raise UsageError("LIZ_LLM_TIMEOUT must be a positive number of seconds")
    if settings.liz_llm_max_retries < 0:
        raise UsageError("LIZ_LLM_MAX_RETRIES must be 0 or more")
    if base_url is None:
        only_openrouter = openai_key is None
        base_url = OPENROUTER_BASE_URL if only_openrouter else OPENAI_BASE_URL
    on_openrouter = "openrouter.ai" in base_url
    if on_openrouter:
        api_key = openrouter_key or openai_key or KEYLESS_PLACEHOLDER
    else:
        api_key = openai_key or openrouter_key or KEYLESS_PLACEHOLDER
    models = [settings.liz_small_model, settings.liz_large_model, settings.liz_embedding_model]
    if on_openrouter:
        models = [name if "/" in name else f"openai/{name}" for name in models]
    log.debug("LLM endpoint %s, models %s", base_url, models)
    return Endpoint(
        base_url=base_url,
        api_key=api_key,
        small_model=models[0],
        large_model=models[1],
        embedding_model=models[2],
        timeout=settings.liz_llm_timeout,
        max_retries=settings.liz_llm_max_retries,
    )


def set_llm_variables(settings: Settings) -> list[str]:
    """The names of the variables that point liz at a real LLM and are set."""
    return [name for name, value in _given(settings).items() if value is not None]


def _given(settings: Settings) -> dict[str, str | None]:
    """Each variable that points liz at an LLM, stripped; None where unset or blank."""
    return {
        "OPENAI_API_KEY": _secret(settings.openai_api_key),
        "OPENROUTER_API_KEY": _secret(settings.openrouter_api_key),
        "OPENAI_BASE_URL": (settings.openai_base_url or "").strip() or None,
    }


def _secret(value: SecretStr | None) -> str | None:
    return None if value is None else value.get_secret_value().strip() or None
