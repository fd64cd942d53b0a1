"""The API described: an OpenAPI 3.1 document at ``GET /openapi.json`` and the same
document as a page people read at ``GET /docs`` (our own template, works offline).

The document lists exactly the routes the app serves (no ``/playground`` when
``LIZ_PLAYGROUND=false``); a test checks that every route is in it.
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

from liz.facts.http import FACTS as FACTS_ROUTE
from liz.http import bodies
from liz.http.bodies import ref
from liz.playground.pages import render_page
from liz.types import AgentReply

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
# Every failure's status and meaning; a route lists the ones it may answer with errors(...).
FAILURES = {
    "400": "The request is wrong; the error says what to fix",
    "401": "LIZ_API_KEY is set and the request lacks it (or a user token)",
    "403": "The credentials may not do this",
    "404": "No such agent, fact or path",
    "409": "A request with this Idempotency-Key is still running (see Retry-After)",
    "413": "The body is too large",
    "415": "The body is not sent as `Content-Type: application/json`",
    "422": "This Idempotency-Key was first sent with another body",
    "500": "An unexpected failure; the body names the request id the server's log has",
    "502": "The LLM answered with an error or an unusable answer",
    "503": "The LLM or the database is not there (not configured, or down; see Retry-After)",
    "504": "The request took longer than LIZ_REQUEST_TIMEOUT",
}
Item = dict[str, Any]


def errors(*statuses: str) -> Item:
    """The failures an operation may answer with, each an ``Error`` body."""
    return {status: {"$ref": f"#/components/responses/{status}"} for status in statuses}


def body(model: type[BaseModel], description: str) -> Item:
    """A JSON response whose body is ``model``."""
    return {"description": description, "content": {"application/json": {"schema": ref(model)}}}


def content(media_type: str, description: str) -> Item:
    """A response that is not JSON (a page, an icon, Prometheus text)."""
    return {"description": description, "content": {media_type: {"schema": {"type": "string"}}}}


def param(name: str, where: str, description: str, **schema: Any) -> Item:
    return {
        "name": name,
        "in": where,
        "required": where == "path",
        "description": description,
        "schema": {"type": "string", **schema},
    }


def operation(
    tag: str,
    summary: str,
    responses: Item,
    *,
    description: str | None = None,
    request: type[BaseModel] | None = None,
    parameters: list[Item] | None = None,
    security: list[Item] | None = None,
) -> Item:
    """One operation; ``request`` is the model of its JSON body."""
    item: Item = {"tags": [tag], "summary": summary}
    if description is not None:
        item["description"] = description
    if security is not None:
        item["security"] = security
    if parameters:
        item["parameters"] = parameters
    if request is not None:
        item["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": ref(request)}},
        }
    item["responses"] = responses
    return item


def reply_or_events(description: str) -> Item:
    """A reply as JSON, or as server-sent events (``Accept: text/event-stream``)."""
    events = "\n".join(
        f"- `{name}`: {model.__name__} — {meaning}" for name, (model, meaning) in SSE_EVENTS.items()
    )
    stream = {
        "schema": {"type": "string", "description": "Server-sent events"},
        "x-liz-events": {name: ref(model) for name, (model, _) in SSE_EVENTS.items()},
    }
    return {
        "description": f"{description} Each event is `event: <name>` and `data: <JSON>`:\n"
        + events,
        "content": {
            "application/json": {"schema": ref(AgentReply)},
            "text/event-stream": stream,
        },
    }


PAGE = content("text/html", "The page")
PAGE_REFUSED = content(
    "text/html", "LIZ_API_KEY is set and the request lacks it: a page asking for the key"
)
FACT_PARAMS = [param("agentId", "path", "The agent"), param("userId", "path", "The user")]
FACT_ID = param("factId", "path", "The fact")


def operations() -> dict[str, Item]:
    """Every operation liz can serve, by path and method."""
    return {
        "/agent/input": {
            "post": operation(
                "agents",
                "Send a message to an agent; get its reply",
                {
                    "200": reply_or_events("The reply; or, as server-sent events, its pieces."),
                    **errors("400", "401", "403", "404", "409", "413", "415", "422"),
                    **errors("500", "502", "503", "504"),
                },
                description="JSON by default; server-sent events with "
                "`Accept: text/event-stream`. The turn's trace is added only when asked "
                "for with `?trace=1`.",
                request=bodies.AgentInputBody,
                parameters=[
                    param(
                        "trace",
                        "query",
                        "`1` (or `true`): add the turn's trace",
                        enum=["0", "1", "true", "false"],
                    ),
                    param(
                        "Idempotency-Key",
                        "header",
                        "A unique key (a UUID) sent again with "
                        "every retry: a retry gets the first answer and stores nothing twice",
                        minLength=1,
                        maxLength=255,
                    ),
                ],
            )
        },
        "/agent/approvals/{approval_id}": {
            "post": operation(
                "agents",
                "Approve or deny a tool call a turn left waiting; get the reply",
                {
                    "200": reply_or_events("The reply after the call ran or was refused."),
                    **errors("400", "401", "403", "404", "409", "500", "502", "503"),
                },
                description="Only the approval's user (by token) or the server key may "
                "decide. JSON by default; server-sent events with `Accept: text/event-stream`. "
                "A 502 or 503 after the call ran keeps the decision: the same decision sent "
                "again gets the reply, and the call does not run again.",
                request=bodies.ApprovalBody,
                parameters=[param("approval_id", "path", "`pendingApproval.id` of the reply")],
            )
        },
        "/agents": {
            "get": operation(
                "agents",
                "List the agents and their routes",
                {"200": body(bodies.Agents, "The agents"), **errors("401", "500")},
            )
        },
        "/metrics": {
            "get": operation(
                "server",
                "Prometheus metrics (text format)",
                {"200": content("text/plain", "The metrics"), **errors("401", "500")},
                description="Behind the API key unless `LIZ_METRICS_PUBLIC=true`.",
            )
        },
        "/usage": {
            "get": operation(
                "server",
                "LLM tokens and cost per agent, user, day or model",
                {
                    "200": body(bodies.UsageReport, "The totals"),
                    **errors("400", "401", "500", "503"),
                },
                parameters=[
                    param("by", "query", "Group by", enum=["agent", "user", "day", "model"]),
                    param("agentId", "query", "Only this agent"),
                    param("userId", "query", "Only this user"),
                    param("since", "query", "From this day (YYYY-MM-DD)"),
                    param("until", "query", "To this day, inclusive (YYYY-MM-DD)"),
                ],
            )
        },
        "/health": {
            "get": operation(
                "server",
                "Whether the database is reachable and an LLM configured",
                {
                    "200": body(bodies.Health, "The server can work"),
                    "503": body(bodies.Health, "The database is unreachable or cannot write"),
                },
                description="Always open, even with LIZ_API_KEY set.",
                security=[],
            )
        },
        FACTS: {
            "parameters": FACT_PARAMS,
            "get": operation(
                "facts",
                "List a user's facts, or search them (`?q=`)",
                {
                    "200": body(bodies.FactList, "The facts"),
                    "409": body(bodies.Error, "Facts embedded with another model: reindex"),
                    **errors("400", "401", "403", "404", "500", "503"),
                },
                parameters=[
                    param("q", "query", "Words to search for, by meaning"),
                    param(
                        "limit",
                        "query",
                        "At most this many (1 to 1000)",
                        type="integer",
                        minimum=1,
                        maximum=1000,
                    ),
                    param(
                        "includeRetired",
                        "query",
                        "Also retired facts (list only)",
                        enum=["true", "false"],
                    ),
                ],
            ),
        },
        FACTS + "/{factId}": {
            "parameters": [*FACT_PARAMS, FACT_ID],
            "get": operation(
                "facts",
                "One fact",
                {"200": body(bodies.Fact, "The fact"), **errors("401", "403", "404", "500", "503")},
            ),
            "delete": operation(
                "facts",
                "Retire a fact (its history stays)",
                {
                    "200": body(bodies.Fact, "The fact, now retired"),
                    **errors("400", "401", "403", "404", "500", "503"),
                },
            ),
        },
        FACTS + "/{factId}/history": {
            "parameters": [*FACT_PARAMS, FACT_ID],
            "get": operation(
                "facts",
                "A fact's history: every change, oldest first",
                {
                    "200": body(bodies.FactHistory, "The changes"),
                    **errors("401", "403", "404", "500", "503"),
                },
            ),
        },
        "/playground": {
            "get": operation(
                "pages",
                "The playground page: chat with an agent and see why it answered so",
                {"200": PAGE, "401": PAGE_REFUSED},
                description="Off with `LIZ_PLAYGROUND=false`. The page holds no data; it "
                "calls the API above.",
            )
        },
        "/openapi.json": {
            "get": operation(
                "pages",
                "This document",
                {
                    "200": {
                        "description": "The OpenAPI 3.1 document",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    **errors("401"),
                },
            )
        },
        "/docs": {
            "get": operation(
                "pages",
                "This document as a page to read",
                {"200": PAGE, "401": PAGE_REFUSED},
                description="The descriptions' Markdown is rendered on the server: the page "
                "needs nothing from elsewhere.",
            )
        },
        "/favicon.ico": {
            "get": operation(
                "pages",
                "The server's icon (SVG), for browsers' tabs",
                {"200": content("image/svg+xml", "The icon")},
            )
        },
    }


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
    paths = {}
    for path, item in operations().items():
        methods = served.get(path, set())
        if methods & item.keys():
            paths[path] = {k: v for k, v in item.items() if k in methods or k == "parameters"}
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
            "responses": {
                status: body(bodies.Error, meaning) for status, meaning in FAILURES.items()
            },
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
        return version("liz")
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
        return Markup("one of ") + Markup(", ").join(
            Markup("<code>%s</code>") % json.dumps(value) for value in schema["enum"]
        )
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
