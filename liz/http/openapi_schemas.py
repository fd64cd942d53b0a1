"""The JSON Schemas of every body the HTTP API reads or writes, for ``/openapi.json``.

Written out rather than generated, so each field says what it means; the tests
check real bodies against them, so they cannot drift from what the server sends.
"""

from __future__ import annotations

from typing import Any

from liz.http.approvals_openapi import TOOL_CALLS_IN_TRACE, TOOL_SCHEMAS

Schema = dict[str, Any]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def string(description: str, **more: Any) -> Schema:
    return {"type": "string", "description": description, **more}


def nullable(schema: Schema) -> Schema:
    kind = schema["type"]
    return {**schema, "type": [kind, "null"]}


def obj(description: str, required: list[str], /, **properties: Schema) -> Schema:
    return {
        "type": "object",
        "description": description,
        "required": required,
        "properties": properties,
    }


def array(items: Schema, description: str = "") -> Schema:
    return {
        "type": "array",
        "items": items,
        **({"description": description} if description else {}),
    }


STAMP = {"format": "date-time"}

SCHEMAS: dict[str, Schema] = {
    "Error": obj(
        "Every failure: what is wrong, and how to fix it where the caller can.",
        ["error"],
        error=string("What went wrong, in a sentence"),
        code=string("A stable name of the error, where it has one (`budget_exceeded`)"),
    ),
    "AgentInputBody": obj(
        "Liz's request body: the message inside `input`.",
        ["input"],
        input=ref("InputObject"),
    ),
    "InputObject": {
        **obj(
            "One message to an agent. Fields not listed here are kept.",
            ["agentId", "userId"],
            agentId=string("The agent to talk to (GET /agents lists them)"),
            userId=string("Who is talking; the conversation and facts are kept per user"),
            roomId=nullable(string("The conversation's room; default one room per agent+user")),
            type={
                "type": "string",
                "enum": ["text", "text_and_image"],
                "default": "text",
                "description": "text_and_image when imageUrls are sent",
            },
            text=nullable(string("The message")),
            imageUrls=array(string("An image URL"), "Images, with type text_and_image"),
        ),
        "additionalProperties": True,
    },
    "AgentReply": {
        **obj(
            "The agent's reply.",
            ["text", "route", "agentId", "userId", "roomId"],
            text=string("The reply"),
            route=nullable(string("The route that wrote the reply")),
            agentId=string("The agent that answered"),
            userId=string("The user it answered"),
            roomId=string("The room of the conversation"),
            trace={**ref("Trace"), "description": "Only with ?trace=1: what the turn did"},
            pendingApproval={**ref("PendingApproval"), "description": "A call waits (tools)"},
        ),
        "additionalProperties": True,
    },
    "Trace": obj(
        "What one turn did: sent only when asked for (?trace=1).",
        ["llmCalls", "route", "recalledFacts", "steps"],
        llmCalls=array(ref("LLMCall"), "Every chat request the turn made, in order"),
        route={
            "oneOf": [ref("RouteTrace"), {"type": "null"}],
            "description": "The route that wrote the reply; null when none did",
        },
        recalledFacts=array(ref("RecalledFact"), "The facts put in the prompt, best first"),
        steps=array(ref("StepTiming"), "Each middleware step, in the order it started"),
        toolCalls=TOOL_CALLS_IN_TRACE,
    ),
    "LLMCall": obj(
        "One chat request, exactly as sent to the LLM.",
        ["step", "model", "streamed", "schema", "messages"],
        step=nullable(string("The middleware step that made the call")),
        model=string("The model asked"),
        streamed={"type": "boolean", "description": "Whether the answer was streamed"},
        schema=nullable(string("The structured answer's schema (e.g. RouteChoice); null: text")),
        messages=array(
            {
                "type": "object",
                "required": ["role", "content"],
                "properties": {
                    "role": {"type": "string", "enum": ["system", "user", "assistant", "tool"]},
                    "content": {
                        "description": "Text, or content parts (text and image_url); null "
                        "for an assistant message that only calls tools",
                        "oneOf": [
                            {"type": "string"},
                            {"type": "array", "items": {"type": "object"}},
                            {"type": "null"},
                        ],
                    },
                },
            },
            "The messages in the order sent: system first, then the context",
        ),
    ),
    "RouteTrace": obj(
        "The route taken and how it was picked.",
        ["name", "chosenBy", "confidence", "reasoning"],
        name=string("The route's name"),
        chosenBy=string(
            "router: the LLM picked among several routes; only_route: one was open, "
            "no LLM was asked; caller: an internal caller named it",
            enum=["router", "only_route", "caller"],
        ),
        confidence={"type": ["number", "null"], "minimum": 0, "maximum": 1},
        reasoning=nullable(string("The router's one-sentence reason")),
    ),
    "RecalledFact": obj(
        "A fact recalled for the prompt.",
        ["id", "text", "score"],
        id=string("The fact's id"),
        text=string("The fact"),
        score={"type": ["number", "null"], "description": "Similarity to the message, 0 to 1"},
    ),
    "StepTiming": obj(
        "How long one middleware step took, in milliseconds.",
        ["step", "depth", "totalMs", "ownMs"],
        step=string("The step's name (load_memories.load is the step load_memories() made)"),
        depth={"type": "integer", "minimum": 0, "description": "Nesting: 1 inside a composition"},
        totalMs={"type": "number", "description": "From entering the step to its return"},
        ownMs={"type": "number", "description": "totalMs without the steps after it"},
    ),
    **TOOL_SCHEMAS,
    "TokenEvent": obj("A piece of the reply, as it is written.", ["text"], text=string("Text")),
    "StreamError": obj(
        "The turn failed after the stream started.",
        ["error", "status"],
        error=string("What went wrong"),
        status={"type": "integer", "description": "The HTTP status a JSON request would get"},
    ),
    "Agents": obj(
        "The agents this server runs.",
        ["agents"],
        agents=array(
            obj(
                "One agent.",
                ["agentId", "name", "routes"],
                agentId=string("Its id"),
                name=string("Its character's name"),
                routes=array(
                    obj(
                        "Something the agent can do.",
                        ["name", "description", "internalOnly"],
                        name=string("The route's name"),
                        description=string("What the router reads to pick it"),
                        internalOnly={
                            "type": "boolean",
                            "description": "Only the bot loop and CLI reach it, never HTTP",
                        },
                    )
                ),
            )
        ),
    ),
    "Health": obj(
        "Whether the server can work.",
        ["status", "database", "llm"],
        status=string(
            "ok, or degraded (503) when the database is unreachable", enum=["ok", "degraded"]
        ),
        database=string("ok, or unreachable: <why>"),
        llm=string("configured or not configured", enum=["configured", "not configured"]),
        learning=ref("LearningBacklog"),
    ),
    "Fact": obj(
        "One fact about a user, as an agent knows it.",
        [
            "id",
            "agentId",
            "userId",
            "text",
            "subject",
            "categories",
            "createdAt",
            "updatedAt",
            "validFrom",
            "invalidFrom",
            "retiredAt",
            "sourceMemoryId",
            "score",
        ],
        id=string("The fact's id"),
        agentId=string("The agent that knows it"),
        userId=string("The user it is about"),
        text=string("The fact, one sentence"),
        subject=string("Whom it is about: user, or a person or thing the user named"),
        categories=array(string("A category"), "2 to 5 categories"),
        createdAt=string("When it was learned", **STAMP),
        updatedAt=string("When it last changed", **STAMP),
        validFrom=string("Since when it is true in the world", **STAMP),
        invalidFrom=nullable(string("From when it stopped being true", **STAMP)),
        retiredAt=nullable(string("When it was retired; null: active", **STAMP)),
        sourceMemoryId=nullable(string("The message it was learned from")),
        score={"type": ["number", "null"], "description": "Similarity, in search results only"},
    ),
    "FactList": obj(
        "Facts, best match or newest first; a list (no q) also says what is still to be "
        "learned from the user.",
        ["facts"],
        facts=array(ref("Fact")),
        learning=ref("LearningBacklog"),
    ),
    "LearningBacklog": obj(
        "Messages still to be learned from (of every user in /health, of one in a facts "
        'list); {"status": "unknown: ..."} instead when the queue cannot be read.',
        ["pending", "failed", "oldestPendingSeconds", "learnAfterIdleSeconds"],
        pending={"type": "integer", "description": "Messages waiting to be learned from"},
        failed={"type": "integer", "description": "Messages learning gave up on"},
        oldestPendingSeconds={
            "type": ["number", "null"],
            "description": "How long the oldest waiting message has waited; null: none waits",
        },
        learnAfterIdleSeconds={
            "type": "number",
            "description": "Quiet time before a conversation is learned (LIZ_LEARN_AFTER_IDLE)",
        },
    ),
    "HistoryEntry": obj(
        "One change to a fact; nothing is overwritten.",
        ["factId", "event", "oldText", "newText", "at", "actor", "reason"],
        factId=string("The fact"),
        event=string("What happened", enum=["ADD", "UPDATE", "DELETE", "NOOP"]),
        oldText=nullable(string("The text before")),
        newText=nullable(string("The text after")),
        at=string("When", **STAMP),
        actor=string("Who: llm, api or cli"),
        reason=string("Why"),
    ),
    "FactHistory": obj(
        "A fact's changes, oldest first.", ["history"], history=array(ref("HistoryEntry"))
    ),
}
