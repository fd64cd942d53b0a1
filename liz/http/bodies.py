"""Every body the HTTP API reads or writes, one pydantic model each.

A body on the wire is its model's ``model_dump(mode="json", by_alias=True)``, and the
schemas of ``/openapi.json`` are generated from the same models, field descriptions
included. Where liz holds the data in a dataclass (a fact, a trace), the body model is
read from its attributes: the dataclass is liz's, the model is the contract.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import CoreSchema
from pydantic_core.core_schema import WithDefaultSchema
from starlette.responses import Response

from liz.facts.domain import Event
from liz.tools.calls import CallOutcome
from liz.types import AgentReply, Body, InputObject, PendingApproval, Stamp, omitted_when_none

REF = "#/components/schemas/{model}"

# Milliseconds, sent to the microsecond.
Ms = Annotated[float, PlainSerializer(lambda value: round(value, 3), return_type=float)]


class Error(Body):
    """Every failure: what is wrong, and how to fix it where the caller can."""

    error: str = Field(description="What went wrong, in a sentence")
    request_id: str | None = omitted_when_none(
        "On an unexpected failure: the request id under which the server's log has it"
    )
    code: str | None = omitted_when_none(
        "A stable name of the error, where it has one (`budget_exceeded`)"
    )


class AgentInputBody(Body):
    """Liz's request body: the message inside `input`."""

    input: InputObject = Field(description="The message")


class ApprovalBody(Body):
    """The decision on a waiting tool call."""

    approve: bool = Field(description="`true`: run the call; `false`: refuse it")


class LLMCall(Body):
    """One chat request, exactly as sent to the LLM."""

    model_config = ConfigDict(validate_by_alias=True)  # `schema` is a name BaseModel keeps

    step: str | None = Field(description="The middleware step that made the call")
    model: str = Field(description="The model asked")
    streamed: bool = Field(description="Whether the answer was streamed")
    schema_name: str | None = Field(
        alias="schema",
        description="The structured answer's schema (e.g. `RouteChoice`); null: text",
    )
    messages: list[dict[str, Any]] = Field(
        description="The messages in the order sent: system first, then the context. Each "
        "has a `role` and a `content` (text, content parts, or null for an assistant "
        "message that only calls tools)"
    )


class RouteTrace(Body):
    """The route taken and how it was picked."""

    name: str = Field(description="The route's name")
    chosen_by: Literal["router", "only_route", "caller"] = Field(
        description="`router`: the LLM picked among several routes; `only_route`: one was "
        "open, no LLM was asked; `caller`: an internal caller named it"
    )
    confidence: float | None = Field(ge=0, le=1, description="The router's confidence, 0 to 1")
    reasoning: str | None = Field(description="The router's one-sentence reason")


class RecalledFact(Body):
    """A fact recalled for the prompt."""

    id: str = Field(description="The fact's id")
    text: str = Field(description="The fact")
    score: float | None = Field(description="Similarity to the message, 0 to 1")


class StepTiming(Body):
    """How long one middleware step took, in milliseconds."""

    step: str = Field(
        description="The step's name (`load_memories.load` is the step `load_memories()` made)"
    )
    depth: int = Field(ge=0, description="Nesting: 1 inside a composition")
    total_ms: Ms = Field(description="From entering the step to its return")
    own_ms: Ms = Field(description="totalMs without the steps after it")


class CallUsage(Body):
    """One LLM call's tokens, as the provider reported them."""

    operation: str = Field(description="`chat` or `embeddings`")
    model: str = Field(description="The model asked")
    purpose: str = Field(description="What for: reply, route, extract, reconcile, embed, ...")
    input_tokens: int = Field(description="Tokens sent, the cached ones included")
    cached_input_tokens: int = Field(description="Served by the provider's prompt cache")
    output_tokens: int = Field(description="Tokens written")


class Usage(Body):
    """The tokens of the turn's LLM calls."""

    input_tokens: int = Field(description="Tokens sent, all calls")
    cached_input_tokens: int = Field(description="Served by the prompt cache, all calls")
    output_tokens: int = Field(description="Tokens written, all calls")
    calls: list[CallUsage] = Field(description="Each call, in order")


class Trace(Body):
    """What one turn did: sent only when asked for (`?trace=1`)."""

    llm_calls: list[LLMCall] = Field(description="Every chat request the turn made, in order")
    route: RouteTrace | None = Field(
        description="The route that wrote the reply; null when none did"
    )
    recalled_facts: list[RecalledFact] = Field(
        description="The facts put in the prompt, best first"
    )
    tool_calls: list[CallOutcome] = Field(description="Each tool call, in the order it ended")
    usage: Usage = Field(description="The tokens the turn spent")
    steps: list[StepTiming] = Field(description="Each middleware step, in the order it started")


class TokenEvent(Body):
    """A piece of the reply, as it is written."""

    text: str = Field(description="Text")


class StreamError(Error):
    """The turn failed after the stream started."""

    status: int = Field(description="The HTTP status a JSON request would get")


class ToolCallEvent(Body):
    """A call the model asked for."""

    id: str = Field(description="The call's id")
    name: str = Field(description="The tool")
    arguments: Any = Field(description="The arguments as the model wrote them")


class ToolResultEvent(Body):
    """What came of a call: its result when ok, else the error the model was sent."""

    id: str = Field(description="The call's id")
    ok: bool = Field(description="Whether the call gave a result")
    result: Any = Field(None, description="The tool's result (when ok)")
    error: str | None = Field(None, description="What went wrong (when not ok)")


class RouteInfo(Body):
    """Something the agent can do."""

    name: str = Field(description="The route's name")
    description: str = Field(description="What the router reads to pick it")
    internal_only: bool = Field(description="Only the bot loop and CLI reach it, never HTTP")


class AgentInfo(Body):
    """One agent."""

    agent_id: str = Field(description="Its id")
    name: str = Field(description="Its character's name")
    routes: list[RouteInfo] = Field(description="What it can do")


class Agents(Body):
    """The agents this server runs."""

    agents: list[AgentInfo] = Field(description="Each agent")


class LearningBacklog(Body):
    """Messages still to be learned from (of every user in `/health`, of one in a facts
    list)."""

    model_config = ConfigDict(validate_by_alias=True)  # liz.learning_queue writes it camelCase

    pending: int = Field(description="Messages waiting to be learned from")
    failed: int = Field(description="Messages learning gave up on")
    oldest_pending_seconds: float | None = Field(
        description="How long the oldest waiting message has waited; null: none waits"
    )
    learn_after_idle_seconds: float = Field(
        description="Quiet time before a conversation is learned (`LIZ_LEARN_AFTER_IDLE`)"
    )


class LearningUnknown(Body):
    """The learning queue could not be read."""

    status: str = Field(description="`unknown: <why>`")


class SetAsideJob(Body):
    """A message learning gave up on (`liz facts retry ID` tries it again)."""

    model_config = ConfigDict(validate_by_alias=True)  # liz.learning_queue writes it camelCase

    id: int = Field(description="The job's id")
    agent_id: str = Field(description="The agent")
    user_id: str = Field(description="The user")
    memory_id: str = Field(description="The message")
    attempts: int = Field(description="How often it was tried")
    reason: str | None = Field(description="The last error")


class ConnectorStatus(Body):
    """A chat bot reading its platform through this database (`liz telegram run`)."""

    bot: str = Field(description="The platform and the bot's id")
    last_poll: str = Field(description="When it last read its platform (ISO 8601)")
    last_poll_seconds_ago: float = Field(description="Seconds since then")
    backlog: int = Field(description="Messages still to answer or send")
    answered: int = Field(description="Messages answered, all time")
    failed: int = Field(description="Messages given up on")


class Health(Body):
    """Whether the server can work."""

    status: Literal["ok", "degraded"] = Field(
        description="`ok`, or `degraded` (503) when the database is unreachable"
    )
    database: str = Field(description="`ok`, or `unreachable: <why>`")
    llm: Literal["configured", "not configured"] = Field(description="Whether an LLM is set")
    mcp: dict[str, dict[str, Any]] | None = omitted_when_none(
        "Each MCP server's status, tools, restarts and last error, by `agentId/server`"
    )
    learning: LearningBacklog | LearningUnknown | None = omitted_when_none(
        "What is still to be learned, of every user (with facts on)"
    )
    set_aside: list[SetAsideJob] | None = omitted_when_none(
        "The messages learning gave up on, oldest first"
    )
    connectors: list[ConnectorStatus] | None = omitted_when_none(
        "Each chat bot's last poll, backlog and answered messages (`liz telegram run`)"
    )


class Fact(Body):
    """One fact about a user, as an agent knows it."""

    id: str = Field(description="The fact's id")
    agent_id: str = Field(description="The agent that knows it")
    user_id: str = Field(description="The user it is about")
    text: str = Field(description="The fact, one sentence")
    subject: str = Field(description="Whom it is about: user, or a person or thing the user named")
    categories: list[str] = Field(description="2 to 5 categories")
    created_at: Stamp = Field(description="When it was learned")
    updated_at: Stamp = Field(description="When it last changed")
    valid_from: Stamp = Field(description="Since when it is true in the world")
    invalid_from: Stamp | None = Field(description="From when it stopped being true")
    retired_at: Stamp | None = Field(description="When it was retired; null: active")
    source_memory_id: str | None = Field(description="The message it was learned from")
    score: float | None = Field(description="Similarity, in search results only")


class FactList(Body):
    """Facts, best match or newest first; a list (no `q`) also says what is still to be
    learned from the user."""

    facts: list[Fact] = Field(description="The facts")
    learning: LearningBacklog | LearningUnknown | None = omitted_when_none(
        "What is still to be learned from the user (a list only)"
    )


class HistoryEntry(Body):
    """One change to a fact; nothing is overwritten."""

    fact_id: str = Field(description="The fact")
    event: Event = Field(description="What happened")
    old_text: str | None = Field(description="The text before")
    new_text: str | None = Field(description="The text after")
    at: Stamp = Field(description="When")
    actor: str = Field(description="Who: `llm`, `api` or `cli`")
    reason: str = Field(description="Why")


class FactHistory(Body):
    """A fact's changes, oldest first."""

    history: list[HistoryEntry] = Field(description="The changes")


class UsageLine(Body):
    """One agent's, user's, day's or model's totals."""

    key: str = Field(description="The agent, user, day or model")
    calls: int = Field(description="LLM calls")
    input_tokens: int = Field(description="Every input token, cached included")
    cached_input_tokens: int = Field(description="Served by the prompt cache")
    cache_share: Annotated[
        float, PlainSerializer(lambda value: round(value, 4), return_type=float)
    ] = Field(description="cachedInputTokens / inputTokens")
    output_tokens: int = Field(description="Tokens written")
    cost: Annotated[float, PlainSerializer(lambda value: round(value, 6), return_type=float)] = (
        Field(alias="costUsd", description="In US dollars; priced models only")
    )
    unpriced_models: list[str] = Field(description="Models the price table does not know")


class UsageReport(Body):
    """LLM tokens and cost, grouped."""

    by: str = Field(description="The grouping: agent, user, day or model")
    usage: list[UsageLine] = Field(description="One line per group")


class TelegramUpdate(BaseModel):
    """A Telegram `Update`, as the Bot API sends it to a webhook; liz reads the rest itself."""

    model_config = ConfigDict(extra="allow")

    update_id: int = Field(description="The update's id, rising")


class TelegramAccepted(Body):
    """The webhook's answer once the update is stored."""

    ok: bool = Field(description="Always `true`: the update is stored")


# The bodies the document names; the models they hold are named with them.
BODIES: tuple[type[BaseModel], ...] = (
    Error,
    AgentInputBody,
    ApprovalBody,
    AgentReply,
    PendingApproval,
    Trace,
    TokenEvent,
    StreamError,
    ToolCallEvent,
    ToolResultEvent,
    Agents,
    Health,
    Fact,
    FactList,
    FactHistory,
    UsageReport,
    TelegramUpdate,
    TelegramAccepted,
)


class _Schemas(GenerateJsonSchema):
    """pydantic's JSON Schema, without the titles it derives from field names, and without
    ``"default": null`` (such a field is left out of the body, not sent as null)."""

    def field_title_should_be_set(self, schema: CoreSchema) -> bool:
        return False

    def default_schema(self, schema: WithDefaultSchema) -> JsonSchemaValue:
        json_schema = super().default_schema(schema)
        if "default" in json_schema and json_schema["default"] is None:
            del json_schema["default"]
        return json_schema


@cache
def schemas() -> dict[str, Any]:
    """The document's ``components.schemas``: every body model and the models it holds."""
    _, document = models_json_schema(
        [(model, "serialization") for model in BODIES], ref_template=REF, schema_generator=_Schemas
    )
    defs: dict[str, Any] = document["$defs"]
    defs.pop("InputSource", None)  # the enum of InputObject.source, a field left out
    return defs


def ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def wire(body: BaseModel) -> dict[str, Any]:
    """The body as JSON data."""
    return body.model_dump(mode="json", by_alias=True)


def json_response(
    body: BaseModel, status_code: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """The body as a response, serialised by pydantic."""
    return Response(
        body.model_dump_json(by_alias=True),
        status_code=status_code,
        headers=headers,
        media_type="application/json",
    )
