"""The API document's entries for ``GET /metrics`` and ``GET /usage``."""

from __future__ import annotations

from typing import Any


def _query(name: str, description: str, **schema: Any) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": {"type": "string", **schema},
    }


def _errors(*statuses: str) -> dict[str, Any]:
    return {status: {"$ref": f"#/components/responses/{status}"} for status in statuses}


_LINE = {
    "type": "object",
    "properties": {
        "key": {"type": "string", "description": "The agent, user, day or model"},
        "calls": {"type": "integer"},
        "inputTokens": {"type": "integer", "description": "Every input token, cached included"},
        "cachedInputTokens": {"type": "integer", "description": "Served by the prompt cache"},
        "cacheShare": {"type": "number", "description": "cachedInputTokens / inputTokens"},
        "outputTokens": {"type": "integer"},
        "costUsd": {"type": "number", "description": "Priced models only"},
        "unpricedModels": {"type": "array", "items": {"type": "string"}},
    },
}

OBSERVE_PATHS: dict[str, Any] = {
    "/metrics": {
        "get": {
            "tags": ["server"],
            "summary": "Prometheus metrics (text format)",
            "description": "Behind the API key unless LIZ_METRICS_PUBLIC=true.",
            "responses": {
                "200": {
                    "description": "The metrics",
                    "content": {"text/plain": {"schema": {"type": "string"}}},
                },
                **_errors("401", "500"),
            },
        }
    },
    "/usage": {
        "get": {
            "tags": ["server"],
            "summary": "LLM tokens and cost per agent, user, day or model",
            "parameters": [
                _query("by", "Group by", enum=["agent", "user", "day", "model"]),
                _query("agentId", "Only this agent"),
                _query("userId", "Only this user"),
                _query("since", "From this day (YYYY-MM-DD)"),
                _query("until", "To this day, inclusive (YYYY-MM-DD)"),
            ],
            "responses": {
                "200": {
                    "description": "The totals",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "by": {"type": "string"},
                                    "usage": {"type": "array", "items": _LINE},
                                },
                            }
                        }
                    },
                },
                **_errors("400", "401", "500", "503"),
            },
        }
    },
}
