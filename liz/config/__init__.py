"""Settings from the environment or a `.env` file (see `.env.example`), as one tree.

``Settings`` is the root, loaded once per process (``liz.config.loading.load_settings``)
and handed down: ``settings.facts`` (``LIZ_FACTS_*``) and ``settings.learning``
(``LIZ_LEARNING_*``) are its branches. ``ServerSettings`` stays apart: ``liz serve``'s
flags replace it. An empty value (``LIZ_AGENTS_DIR=`` in `.env`) means unset.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from liz.facts.settings import FactSettings
from liz.learning_queue.settings import LearningSettings

# PyJWT refuses shorter HS256 keys (RFC 7518 asks for a key as long as the hash).
MIN_JWT_SECRET_BYTES = 32


class ServerSettings(BaseSettings):
    """Where ``liz serve`` listens, unless ``--host``/``--port`` say otherwise."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_ignore_empty=True)

    server_host: str = "127.0.0.1"
    server_port: int = Field(default=3000, ge=0, le=65535)


class Settings(BaseSettings):
    """Core settings. Field names match the environment variables, case-insensitively."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", env_ignore_empty=True)

    # The branches of the tree, each read from its own prefix.
    facts: FactSettings = Field(default_factory=FactSettings)
    learning: LearningSettings = Field(default_factory=LearningSettings)

    database_url: str = "sqlite+aiosqlite:///./liz.db"
    # Ten kept: a turn with facts on holds one or two at once, each for a few statements;
    # an overflow connection is closed as it comes back.
    db_pool_size: int = 10
    db_max_overflow: int = 10
    db_pool_timeout: float = 30.0
    db_echo: bool = False

    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    openrouter_api_key: SecretStr | None = None
    liz_small_model: str = "gpt-4o-mini"
    liz_large_model: str = "gpt-4o"
    liz_embedding_model: str = "text-embedding-3-small"
    # "json_schema" where the endpoint enforces schemas (OpenAI, most of OpenRouter);
    # "json_object" for servers that only offer JSON mode (the schema goes in the prompt).
    liz_structured_output: Literal["json_schema", "json_object"] = "json_schema"
    liz_llm_timeout: float = 60.0
    liz_llm_max_retries: int = 2

    liz_api_key: SecretStr | None = None
    # Per-user tokens for browsers: HS256 JWTs signed with this secret, `sub` = userId.
    liz_jwt_secret: SecretStr | None = None
    # Seconds one HTTP request may take from start to answer (504 after); 0 turns it off.
    liz_request_timeout: float = Field(default=120.0, ge=0)
    liz_prompts_dir: str | None = None
    # Estimated tokens (liz.prompts.tokens) the previous conversation may take in a prompt: the
    # oldest messages are left out first. 0: no budget, the last 100 messages, as Liz.
    liz_context_tokens: int = Field(default=4000, ge=0)
    # The folder of agents served when no app is named (default: the bundled agents).
    liz_agents_dir: str | None = None
    # The app `uvicorn --factory liz.asgi:app_from_env` serves, as MODULE:ATTRIBUTE.
    liz_app: str | None = None
    # Browser origins allowed to call the HTTP API (CORS), comma-separated; none by default.
    liz_cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # GET /playground and ?trace=1 on POST /agent/input; off for servers whose callers
    # should not see the agents' prompts.
    liz_playground: bool = True
    # Serve the scripted model of liz.testing in-process instead of an LLM (trying liz
    # without a key); refused when a key or base URL is set.
    liz_scripted_llm: bool = False
    # Model requests that ask for tool calls, per turn, before the turn is stopped.
    liz_tool_max_steps: int = Field(default=8, ge=1)
    # Seconds one tool call may run before the model is told it timed out.
    liz_tool_timeout: float = Field(default=30.0, gt=0)
    # Seconds a tool call waiting for a person's approval may still be decided.
    liz_tool_approval_ttl: float = Field(default=86400.0, gt=0)
    # Host header values answered (comma-separated; * any); empty: the loopback names.
    liz_allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Serve on a non-loopback address without LIZ_API_KEY or LIZ_JWT_SECRET, on purpose.
    liz_allow_open: bool = False
    # Let user tokens ask for traces (?trace=1); by default only LIZ_API_KEY gets them.
    liz_traces_for_users: bool = False
    # Seconds a connection may take to send a whole request's headers before it is closed.
    liz_header_timeout: float = Field(default=10.0, gt=0)
    # Seconds a request may take to send its whole body once its headers are in (408).
    liz_body_timeout: float = Field(default=30.0, gt=0)
    # Open connections (or requests running) `liz serve` serves at once; a request on one
    # more is answered 503 and its connection closed.
    liz_max_connections: int = Field(default=1000, ge=1)
    # GET /metrics without the API key (for a Prometheus on a private network).
    liz_metrics_public: bool = False
    # A JSON file of model prices over genai-prices' table (docs/observability.md).
    liz_price_table: str | None = None
    # USD one user may spend on LLM calls per UTC day, over every agent, learning included;
    # a turn over it is answered 429 (docs/observability.md). Unset: no limit.
    liz_user_daily_budget_usd: float | None = Field(default=None, gt=0)
    # USD one agent may spend on LLM calls per UTC day, over every user. Unset: no limit.
    liz_agent_daily_budget_usd: float | None = Field(default=None, gt=0)
    # Log lines as readable text, or one JSON object each with trace and span ids.
    liz_log_format: Literal["text", "json"] = "text"

    @field_validator("liz_jwt_secret")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value().encode()) < MIN_JWT_SECRET_BYTES:
            raise ValueError(
                f"LIZ_JWT_SECRET must be at least {MIN_JWT_SECRET_BYTES} bytes long for HS256; "
                "make one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
        return value

    @field_validator("openai_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(
                "OPENAI_BASE_URL must be an http(s) URL such as http://127.0.0.1:11434/v1; "
                "leave it empty to use OpenAI itself"
            )
        return value.strip()

    @field_validator("liz_cors_origins", "liz_allowed_hosts", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        if isinstance(value, str):
            return [origin.strip() for origin in value.split(",") if origin.strip()]
        return value
