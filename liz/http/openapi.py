"""The API described: an OpenAPI 3.1 document at ``GET /openapi.json`` and the same
document as a page people read at ``GET /docs`` (our own template, works offline).

The document lists exactly the routes the app serves (no ``/playground`` when
``LIZ_PLAYGROUND=false``); a test checks that every route is in it.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from liz.facts.http import FACTS as FACTS_ROUTE
from liz.http.approvals_openapi import TOOL_SSE_EVENTS, approval_operations
from liz.http.openapi_schemas import SCHEMAS, Schema, ref, string
from liz.observe.openapi_paths import OBSERVE_PATHS
from liz.playground.pages import render_page
from liz.telegram.webhook import WEBHOOK_OPERATIONS

# The facts path as the document writes it: without the routes' `:segment` converters.
FACTS = FACTS_ROUTE.replace(":segment", "")

SSE_EVENTS = {
    "token": ("TokenEvent", "A piece of the reply; many, in order"),
    "trace": ("Trace", "Only with ?trace=1: what the turn did, once, before reply or error"),
    "reply": ("AgentReply", "The whole reply, last (without trace)"),
    "error": ("StreamError", "The turn failed, last"),
    **TOOL_SSE_EVENTS,
}
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


def error_responses(*statuses: str) -> dict[str, Any]:
    return {status: {"$ref": f"#/components/responses/{status}"} for status in statuses}


def json_body(schema: Schema, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def html_page(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"text/html": {"schema": string("HTML")}}}


def query(name: str, description: str, schema: Schema) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


FACT_PATH_PARAMS = [
    {"name": name, "in": "path", "required": True, "schema": {"type": "string"}, "description": d}
    for name, d in (("agentId", "The agent"), ("userId", "The user"))
]
FACT_ID = {"name": "factId", "in": "path", "required": True, "schema": {"type": "string"}}
PATH_KEYS = {"parameters"}
PAGE_REFUSED = html_page("LIZ_API_KEY is set and the request lacks it: a page asking for the key")


def operations() -> dict[str, dict[str, Any]]:
    """Every operation liz can serve, by path and method."""
    sse_description = "\n".join(
        f"- `{name}`: {ref_name} — {meaning}" for name, (ref_name, meaning) in SSE_EVENTS.items()
    )
    events = {name: ref(ref_name) for name, (ref_name, _) in SSE_EVENTS.items()}
    return {
        **approval_operations(sse_description, events),
        "/agent/input": {
            "post": {
                "tags": ["agents"],
                "summary": "Send a message to an agent; get its reply",
                "description": "JSON by default; server-sent events with "
                "`Accept: text/event-stream`. The turn's trace is added only when asked "
                "for with `?trace=1`.",
                "parameters": [
                    query(
                        "trace",
                        "1 (or true): add the turn's trace",
                        {"type": "string", "enum": ["0", "1", "true", "false"]},
                    ),
                    {
                        "name": "Idempotency-Key",
                        "in": "header",
                        "required": False,
                        "description": "A unique key (a UUID) sent again with every retry: "
                        "a retry gets the first answer and stores nothing twice",
                        "schema": {"type": "string", "minLength": 1, "maxLength": 255},
                    },
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": ref("AgentInputBody")}},
                },
                "responses": {
                    "200": {
                        "description": "The reply; or, as server-sent events, its pieces. "
                        "Each event is `event: <name>` and `data: <JSON>`:\n" + sse_description,
                        "content": {
                            "application/json": {"schema": ref("AgentReply")},
                            "text/event-stream": {
                                "schema": string("Server-sent events"),
                                "x-liz-events": {
                                    name: ref(ref_name)
                                    for name, (ref_name, _) in SSE_EVENTS.items()
                                },
                            },
                        },
                    },
                    **error_responses(
                        "400",
                        "401",
                        "403",
                        "404",
                        "409",
                        "413",
                        "415",
                        "422",
                        "500",
                        "502",
                        "503",
                        "504",
                    ),
                },
            }
        },
        "/agents": {
            "get": {
                "tags": ["agents"],
                "summary": "List the agents and their routes",
                "responses": {
                    "200": json_body(ref("Agents"), "The agents"),
                    **error_responses("401", "500"),
                },
            }
        },
        **OBSERVE_PATHS,
        **WEBHOOK_OPERATIONS,
        "/health": {
            "get": {
                "tags": ["server"],
                "summary": "Whether the database is reachable and an LLM configured",
                "description": "Always open, even with LIZ_API_KEY set.",
                "security": [],
                "responses": {
                    "200": json_body(ref("Health"), "The server can work"),
                    "503": json_body(ref("Health"), "The database is unreachable or cannot write"),
                },
            }
        },
        FACTS: {
            "parameters": FACT_PATH_PARAMS,
            "get": {
                "tags": ["facts"],
                "summary": "List a user's facts, or search them (?q=)",
                "parameters": [
                    query("q", "Words to search for, by meaning", {"type": "string"}),
                    query(
                        "limit",
                        "At most this many (1 to 1000)",
                        {"type": "integer", "minimum": 1, "maximum": 1000},
                    ),
                    query(
                        "includeRetired",
                        "Also retired facts (list only)",
                        {"type": "string", "enum": ["true", "false"]},
                    ),
                ],
                "responses": {
                    "200": json_body(ref("FactList"), "The facts"),
                    "409": json_body(ref("Error"), "Facts embedded with another model: reindex"),
                    **error_responses("400", "401", "403", "404", "500", "503"),
                },
            },
        },
        FACTS + "/{factId}": {
            "parameters": [*FACT_PATH_PARAMS, FACT_ID],
            "get": {
                "tags": ["facts"],
                "summary": "One fact",
                "responses": {
                    "200": json_body(ref("Fact"), "The fact"),
                    **error_responses("401", "403", "404", "500", "503"),
                },
            },
            "delete": {
                "tags": ["facts"],
                "summary": "Retire a fact (its history stays)",
                "responses": {
                    "200": json_body(ref("Fact"), "The fact, now retired"),
                    **error_responses("400", "401", "403", "404", "500", "503"),
                },
            },
        },
        FACTS + "/{factId}/history": {
            "parameters": [*FACT_PATH_PARAMS, FACT_ID],
            "get": {
                "tags": ["facts"],
                "summary": "A fact's history: every change, oldest first",
                "responses": {
                    "200": json_body(ref("FactHistory"), "The changes"),
                    **error_responses("401", "403", "404", "500", "503"),
                },
            },
        },
        "/playground": {
            "get": {
                "tags": ["pages"],
                "summary": "The playground page: chat with an agent and see why it answered so",
                "description": "Off with LIZ_PLAYGROUND=false. The page holds no data; it "
                "calls the API above.",
                "responses": {"200": html_page("The page"), "401": PAGE_REFUSED},
            }
        },
        "/openapi.json": {
            "get": {
                "tags": ["pages"],
                "summary": "This document",
                "responses": {
                    "200": json_body({"type": "object"}, "The OpenAPI 3.1 document"),
                    **error_responses("401"),
                },
            }
        },
        "/docs": {
            "get": {
                "tags": ["pages"],
                "summary": "This document as a page to read",
                "description": "The descriptions' Markdown is rendered on the server: the page "
                "needs nothing from elsewhere.",
                "responses": {"200": html_page("The page"), "401": PAGE_REFUSED},
            }
        },
        "/favicon.ico": {
            "get": {
                "tags": ["pages"],
                "summary": "The server's icon (SVG), for browsers' tabs",
                "responses": {
                    "200": {
                        "description": "The icon",
                        "content": {"image/svg+xml": {"schema": string("SVG")}},
                    }
                },
            }
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
            paths[path] = {key: value for key, value in item.items() if key in methods | PATH_KEYS}
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
            "schemas": SCHEMAS,
            "responses": {
                status: json_body(ref("Error"), meaning) for status, meaning in FAILURES.items()
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
    schemas = {name: json.dumps(schema, indent=2) for name, schema in SCHEMAS.items()}
    return render_page("docs.html", document=document, schemas=schemas, as_json=_pretty)


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def api_doc_routes() -> list[BaseRoute]:
    return [
        Route("/openapi.json", openapi_json, methods=["GET"]),
        Route("/docs", docs_page, methods=["GET"]),
    ]
