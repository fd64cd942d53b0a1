"""The OpenAPI parts of tools: the approval endpoint, the tool events and their schemas.

Written apart from liz.http.openapi_schemas (which takes them in), with its own small
helpers, so neither module imports the other's.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def string(description: str, **more: Any) -> Schema:
    return {"type": "string", "description": description, **more}


def obj(description: str, required: list[str], /, **properties: Schema) -> Schema:
    return {
        "type": "object",
        "description": description,
        "required": required,
        "properties": properties,
    }


ANY_JSON: Schema = {"description": "Any JSON value"}

TOOL_SSE_EVENTS = {
    "tool_call": ("ToolCallEvent", "The model called a tool (before it runs); among the tokens"),
    "tool_result": ("ToolResultEvent", "What a call gave, or its error, once it ended"),
}

TOOL_SCHEMAS: dict[str, Schema] = {
    "ToolCallEvent": obj(
        "A call the model asked for.",
        ["id", "name", "arguments"],
        id=string("The call's id"),
        name=string("The tool"),
        arguments={**ANY_JSON, "description": "The arguments as the model wrote them"},
    ),
    "ToolResultEvent": obj(
        "What came of a call: its result when ok, else the error the model was sent.",
        ["id", "ok"],
        id=string("The call's id"),
        ok={"type": "boolean"},
        result={**ANY_JSON, "description": "The tool's result (when ok)"},
        error=string("What went wrong (when not ok)"),
    ),
    "ToolCallTrace": obj(
        "One tool call of the turn.",
        ["id", "name", "arguments", "ok", "durationMs"],
        id=string("The call's id"),
        name=string("The tool"),
        arguments=ANY_JSON,
        ok={"type": "boolean"},
        result=ANY_JSON,
        error=string("What went wrong"),
        durationMs={"type": "number", "description": "How long the call took"},
    ),
    "PendingApproval": obj(
        "A call waiting for the user's approval: POST /agent/approvals/{id} decides it.",
        ["id", "tool", "arguments", "text", "expiresAt"],
        id=string("The approval's id"),
        tool=string("The tool that would run"),
        arguments=ANY_JSON,
        text=string("The model's text before the call"),
        expiresAt=string("After this, the approval can no longer be decided", format="date-time"),
    ),
    "ApprovalBody": obj(
        "The decision.",
        ["approve"],
        approve={"type": "boolean", "description": "true: run the call; false: refuse it"},
    ),
}

TOOL_CALLS_IN_TRACE = {
    "type": "array",
    "items": ref("ToolCallTrace"),
    "description": "Each tool call, in the order it ended",
}


def approval_operations(sse_description: str, events: dict[str, Any]) -> dict[str, Any]:
    """``POST /agent/approvals/{approval_id}``, answered as ``POST /agent/input`` is."""
    return {
        "/agent/approvals/{approval_id}": {
            "post": {
                "tags": ["agents"],
                "summary": "Approve or deny a tool call a turn left waiting; get the reply",
                "description": "Only the approval's user (by token) or the server key may "
                "decide. JSON by default; server-sent events with `Accept: text/event-stream`. "
                "A 502 or 503 after the call ran keeps the decision: the same decision sent "
                "again gets the reply, and the call does not run again.",
                "parameters": [
                    {
                        "name": "approval_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                        "description": "pendingApproval.id of the reply",
                    }
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": ref("ApprovalBody")}},
                },
                "responses": {
                    "200": {
                        "description": "The reply after the call ran or was refused:\n"
                        + sse_description,
                        "content": {
                            "application/json": {"schema": ref("AgentReply")},
                            "text/event-stream": {
                                "schema": string("Server-sent events"),
                                "x-liz-events": events,
                            },
                        },
                    },
                    **{
                        status: {"$ref": f"#/components/responses/{status}"}
                        for status in (
                            "400",
                            "401",
                            "403",
                            "404",
                            "409",
                            "429",
                            "500",
                            "502",
                            "503",
                        )
                    },
                },
            }
        }
    }
