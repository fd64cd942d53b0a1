"""JSON schemas for structured output, in the strict form OpenAI's json_schema mode accepts."""

from __future__ import annotations

import copy
import functools
import re
from typing import Any

from pydantic import BaseModel

_NOT_A_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def schema_name(model: type[BaseModel]) -> str:
    """The name sent with the schema: the model's class name, as OpenAI's name rules allow."""
    return _NOT_A_NAME.sub("_", model.__name__)[:64] or "answer"


@functools.lru_cache(maxsize=256)
def response_schema(model: type[BaseModel]) -> tuple[dict[str, Any], bool]:
    """The model's JSON schema made strict, and whether strict mode can hold it.

    Strict mode wants every object closed (``additionalProperties: false``) with all its
    properties required and no defaults. A model with free-form maps (``dict[str, X]``)
    cannot be closed; it is then sent non-strict and pydantic alone checks the answer.

    Built once per model class (pydantic's schema generation is slow, and every
    structured answer needs one); the schema returned is shared: read it, never change it.
    """
    schema = copy.deepcopy(model.model_json_schema())
    definitions = schema.get("$defs", {})
    strict = _make_strict(schema, definitions)
    return schema, strict


def _make_strict(node: Any, definitions: dict[str, Any]) -> bool:
    if isinstance(node, list):
        return all([_make_strict(item, definitions) for item in node])
    if not isinstance(node, dict):
        return True
    node.pop("default", None)
    _inline_ref_with_siblings(node, definitions)
    strict = True
    if node.get("type") == "object" or "properties" in node:
        extra = node.get("additionalProperties")
        if extra not in (None, False):
            strict = False
        else:
            node["additionalProperties"] = False
            node["required"] = list(node.get("properties", {}))
    for key in ("properties", "$defs"):
        for child in node.get(key, {}).values():
            strict = _make_strict(child, definitions) and strict
    for key in ("items", "anyOf", "allOf", "oneOf", "prefixItems", "additionalProperties"):
        if key in node:
            strict = _make_strict(node[key], definitions) and strict
    return strict


def _inline_ref_with_siblings(node: dict[str, Any], definitions: dict[str, Any]) -> None:
    # Strict mode refuses "$ref" next to other keys (pydantic adds a description
    # there), so such a node takes the referenced definition's content instead.
    ref = node.get("$ref")
    if not isinstance(ref, str) or len(node) == 1 or not ref.startswith("#/$defs/"):
        return
    target = definitions.get(ref.removeprefix("#/$defs/"))
    if isinstance(target, dict):
        del node["$ref"]
        for key, value in copy.deepcopy(target).items():
            node.setdefault(key, value)
