"""The API described: an OpenAPI 3.1 document at ``GET /openapi.json`` and the same
document as a page people read at ``GET /docs`` (our own template, works offline).

Each body's schema is generated from its model (:mod:`liz.http.bodies`); this module
declares the operations: one :func:`operation` per method and path, its answer, and the
failures it may answer with (:data:`FAILURES`, each an ``Error`` body). The document lists
exactly the routes the app serves (no ``/playground`` when ``LIZ_PLAYGROUND=false``); a
test checks that every route is in it.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from markupsafe import Markup, escape
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from liz.cli.distribution import DISTRIBUTION
from liz.facts.http import FACTS as FACTS_ROUTE
from liz.http import bodies
from liz.http.bodies import ref
from liz.playground.pages import render_page
from liz.types import AgentReply

Item = dict[str, Any]
# The facts path as the document writes it: without the routes' `:segment` converters.
FACTS = FACTS_ROUTE.replace(":segment", "")

# A streamed reply's events: name -> (body, meaning).
SSE_EVENTS: dict[str, tuple[type[BaseModel], str]] = {
    "token": (bodies.TokenEvent, "A piece of the reply; many, in order"),
    "tool_call": (bodies.ToolCallEvent, "The model called a tool (before it runs)"),
    "tool_result": (bodies.ToolResultEvent, "What a call gave, or its error, once it ended"),
    "trace": (bodies.Trace, "Only with `?trace=1`: what the turn did, once, before the end"),
    "reply": (AgentReply, "The whole reply, last (without trace)"),
    "error": (bodies.StreamError, "The turn failed, last"),
}
# Every failure's status and meaning; an operation names those it may answer with.
FAILURES = {
    "400": "The request is wrong (NUL in a path or query, on any route); the error says how",
    "401": "LIZ_API_KEY is set and the request lacks it (or a user token)",
    "403": "The credentials may not do this",
    "404": "No such agent, fact or path",
    "408": "The body did not all arrive within LIZ_BODY_TIMEOUT; the connection is closed",
    "409": "A request with this Idempotency-Key is still running (see Retry-After)",
    "413": "The body is too large",
    "415": "The body is not sent as `Content-Type: application/json`",
    "422": "This Idempotency-Key was first sent with another body",
    "429": "`budget_exceeded`: the user or the agent has spent its daily budget "
    "(LIZ_USER_DAILY_BUDGET_USD, LIZ_AGENT_DAILY_BUDGET_USD); Retry-After: seconds until "
    "it resets, at the next midnight UTC",
    "500": "An unexpected failure; the body names the request id the server's log has",
    "502": "The LLM answered with an error or an unusable answer",
    "503": "The LLM or the database is not there (not configured, or down; see Retry-After)",
    "504": "The request took longer than LIZ_REQUEST_TIMEOUT",
}


def body(model: type[BaseModel], description: str) -> Item:
    """A JSON answer whose body is ``model``."""
    return {"description": description, "content": {"application/json": {"schema": ref(model)}}}


def text(media_type: str, description: str, kind: str = "string") -> Item:
    """An answer without a model: a page, an icon, Prometheus text, this document."""
    return {"description": description, "content": {media_type: {"schema": {"type": kind}}}}


def param(name: str, where: str, description: str, **schema: Any) -> Item:
    """A parameter ``in`` path, query or header; a string unless ``schema`` says more."""
    kept = {"name": name, "in": where, "required": where == "path", "description": description}
    return kept | {"schema": {"type": "string", **schema}}


def operation(
    tag: str,
    summary: str,
    ok: Item,
    failures: str = "",
    *,
    description: str | None = None,
    request: type[BaseModel] | None = None,
    parameters: tuple[Item, ...] = (),
    responses: Item | None = None,
    security: list[Item] | None = None,
) -> Item:
    """One operation: its 200 answer ``ok``, the statuses of ``FAILURES`` it may answer
    with (``"401 500"``), other answers (``responses``), and the model of its JSON body."""
    item: Item = {"tags": [tag], "summary": summary}
    if description is not None:
        item["description"] = description
    if security is not None:
        item["security"] = security
    if parameters:
        item["parameters"] = list(parameters)
    if request is not None:
        content = {"application/json": {"schema": ref(request)}}
        item["requestBody"] = {"required": True, "content": content}
    failed = {status: {"$ref": f"#/components/responses/{status}"} for status in failures.split()}
    item["responses"] = {"200": ok, **(responses or {}), **failed}
    return item


def reply_or_events(description: str) -> Item:
    """A reply as JSON, or as server-sent events (``Accept: text/event-stream``)."""
    events = "".join(
        f"\n- `{name}`: {m.__name__} — {what}" for name, (m, what) in SSE_EVENTS.items()
    )
    stream = {
        "schema": {"type": "string", "description": "Server-sent events"},
        "x-liz-events": {name: ref(model) for name, (model, _) in SSE_EVENTS.items()},
    }
    return {
        "description": f"{description} Each event is `event: <name>` and `data: <JSON>`:{events}",
        "content": {"application/json": {"schema": ref(AgentReply)}, "text/event-stream": stream},
    }


PAGE = text("text/html", "The page")
PAGE_REFUSED = text(
    "text/html", "LIZ_API_KEY is set and the request lacks it: a page asking for the key"
)
FACT = (param("agentId", "path", "The agent"), param("userId", "path", "The user"))
FACT_ID = (*FACT, param("factId", "path", "The fact"))
TRACE = param(
    "trace", "query", "`1` (or `true`): add the turn's trace", enum=["0", "1", "true", "false"]
)
IDEMPOTENCY_KEY = param(
    "Idempotency-Key", "header", "A unique key (a UUID) sent again with every retry: a retry "
    "gets the first answer and stores nothing twice", minLength=1, maxLength=255,
)  # fmt: skip
USAGE = (
    param("by", "query", "Group by", enum=["agent", "user", "day", "model"]),
    param("agentId", "query", "Only this agent"),
    param("userId", "query", "Only this user"),
    param("since", "query", "From this day (YYYY-MM-DD)"),
    param("until", "query", "To this day, inclusive (YYYY-MM-DD)"),
)
FACTS_QUERY = (
    param("q", "query", "Words to search for, by meaning"),
    param("limit", "query", "At most this many", type="integer", minimum=1, maximum=1000),
    param("includeRetired", "query", "Also retired facts (list only)", enum=["true", "false"]),
)  # fmt: skip
STREAMS = "JSON by default; server-sent events with `Accept: text/event-stream`."


def operations() -> dict[str, Item]:
    """Every operation liz can serve, by ``"method path"``."""
    return {
        "post /agent/input": operation(
            "agents", "Send a message to an agent; get its reply",
            reply_or_events("The reply; or, as server-sent events, its pieces."),
            "400 401 403 404 408 409 413 415 422 429 500 502 503 504",
            description=f"{STREAMS} The turn's trace is added only when asked for with `?trace=1`.",
            request=bodies.AgentInputBody, parameters=(TRACE, IDEMPOTENCY_KEY),
        ),
        "post /agent/approvals/{approval_id}": operation(
            "agents", "Approve or deny a tool call a turn left waiting; get the reply",
            reply_or_events("The reply after the call ran or was refused."),
            "400 401 403 404 409 429 500 502 503",
            description="Only the approval's user (by token) or the server key may decide. "
            f"{STREAMS} A 502 or 503 after the call ran keeps the decision: the same decision "
            "sent again gets the reply, and the call does not run again.",
            request=bodies.ApprovalBody,
            parameters=(param("approval_id", "path", "`pendingApproval.id` of the reply"),),
        ),
        "get /agents": operation(
            "agents", "List the agents and their routes", body(bodies.Agents, "The agents"),
            "401 500",
        ),
        "get /metrics": operation(
            "server", "Prometheus metrics (text format)", text("text/plain", "The metrics"),
            "401 500", description="Behind the API key unless `LIZ_METRICS_PUBLIC=true`.",
        ),
        "get /usage": operation(
            "server", "LLM tokens and cost per agent, user, day or model",
            body(bodies.UsageReport, "The totals"), "400 401 500 503", parameters=USAGE,
        ),
        "get /health": operation(
            "server", "Whether the database is reachable and an LLM configured",
            body(bodies.Health, "The server can work"),
            description="Always open, even with LIZ_API_KEY set.",
            responses={"503": body(bodies.Health, "The database is unreachable or cannot write")},
            security=[],
        ),
        f"get {FACTS}": operation(
            "facts", "List a user's facts, or search them (`?q=`)",
            body(bodies.FactList, "The facts"), "400 401 403 404 500 503",
            parameters=(*FACT, *FACTS_QUERY),
            responses={"409": body(bodies.Error, "Facts embedded with another model: reindex")},
        ),
        f"get {FACTS}/{{factId}}": operation(
            "facts", "One fact", body(bodies.Fact, "The fact"), "401 403 404 500 503",
            parameters=FACT_ID,
        ),
        f"delete {FACTS}/{{factId}}": operation(
            "facts", "Retire a fact (its history stays)", body(bodies.Fact, "The fact, retired"),
            "400 401 403 404 500 503", parameters=FACT_ID,
        ),
        f"get {FACTS}/{{factId}}/history": operation(
            "facts", "A fact's history: every change, oldest first",
            body(bodies.FactHistory, "The changes"), "401 403 404 500 503", parameters=FACT_ID,
        ),
        "get /playground": operation(
            "pages", "The playground page: chat with an agent and see why it answered so", PAGE,
            description="Off with `LIZ_PLAYGROUND=false`. The page holds no data; it calls the "
            "API above.", responses={"401": PAGE_REFUSED},
        ),
        "get /openapi.json": operation(
            "pages", "This document", text("application/json", "This document", "object"), "401"
        ),
        "get /docs": operation(
            "pages", "This document as a page to read", PAGE, responses={"401": PAGE_REFUSED},
            description="The descriptions' Markdown is rendered on the server: the page needs "
            "nothing from elsewhere.",
        ),
        "post /telegram/{agentId}": operation(
            "connectors", "Telegram's webhook: one update for the agent's bot",
            body(bodies.TelegramAccepted, "Stored; answered in the chat"), "400 401 404 503",
            description="On when TELEGRAM_WEBHOOK_SECRET and TELEGRAM_BOT_TOKEN are set. Needs "
            "`X-Telegram-Bot-Api-Secret-Token` equal to TELEGRAM_WEBHOOK_SECRET (no "
            "LIZ_API_KEY). The update is stored before the 200; the reply is sent to the chat, "
            "not in the response.",
            request=bodies.TelegramUpdate, security=[],
            parameters=(
                param("agentId", "path", "The agent that answers"),
                param(
                    "X-Telegram-Bot-Api-Secret-Token", "header", "The secret_token of setWebhook"
                ),
            ),
        ),
        "get /favicon.ico": operation(
            "pages", "The server's icon (SVG), for browsers' tabs",
            text("image/svg+xml", "The icon"),
        ),
    }  # fmt: skip


def served_paths(routes: list[BaseRoute]) -> dict[str, set[str]]:
    """The methods each route of an app answers (HEAD aside), by path."""
    served: dict[str, set[str]] = {}
    for route in routes:
        if isinstance(route, Route) and route.methods:
            served.setdefault(route.path_format, set()).update(
                method.lower() for method in route.methods if method != "HEAD"
            )
    return served


def openapi_document(routes: list[BaseRoute]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of an app with these routes."""
    served = served_paths(routes)
    paths: dict[str, Item] = {}
    for key, item in operations().items():
        method, path = key.split(" ", 1)
        if method in served.get(path, ()):
            paths.setdefault(path, {})[method] = item
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "liz",
            "version": _liz_version(),
            "description": "Agents over HTTP: send messages, read what they know about "
            'each user. Errors are `{"error": "..."}` with the status below.',
        },
        "security": [{}, {"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": bodies.schemas(),
            "responses": {status: body(bodies.Error, what) for status, what in FAILURES.items()},
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Needed when the server sets LIZ_API_KEY: "
                    "`Authorization: Bearer <LIZ_API_KEY>`",
                }
            },
        },
    }


def _liz_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


async def openapi_json(request: Request) -> Response:
    return JSONResponse(openapi_document(request.app.routes))


async def docs_page(request: Request) -> Response:
    document = openapi_document(request.app.routes)
    return render_page("docs.html", document=document, type_of=type_of)


def type_of(schema: dict[str, Any]) -> Markup:
    """A schema as the page names its type: a link to a named schema, or a short phrase."""
    if "$ref" in schema:
        name = escape(schema["$ref"].split("/")[-1])
        return Markup(f'<a href="#schema-{name}">{name}</a>')
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return Markup(" or ").join(type_of(part) for part in schema[key])
    if "enum" in schema:
        values = (Markup("<code>%s</code>") % json.dumps(value) for value in schema["enum"])
        return Markup("one of ") + Markup(", ").join(values)
    kind = schema.get("type", "any JSON")
    if kind == "array":
        return Markup("array of ") + type_of(schema.get("items", {}))
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return Markup("object of ") + type_of(schema["additionalProperties"])
    return escape(f"{kind} ({schema['format']})" if "format" in schema else kind)


def api_doc_routes() -> list[BaseRoute]:
    return [
        Route("/openapi.json", openapi_json, methods=["GET"]),
        Route("/docs", docs_page, methods=["GET"]),
    ]
