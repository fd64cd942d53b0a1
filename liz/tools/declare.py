"""A tool from a plain function: its parameters from type hints, its purpose from the docstring.

The parameters become a pydantic model, so the model's arguments are validated before
the function runs, and the model's JSON schema is what the LLM is shown. A signature
that cannot be described is refused here, when the tool is declared.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable
from typing import Any, get_type_hints

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model

from liz.errors import UsageError
from liz.tools.context import ToolContext
from liz.types import Tool

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def python_tool(
    fn: Callable[..., Any], *, name: str | None = None, requires_approval: bool = False
) -> Tool:
    """The :class:`Tool` that calls ``fn``; a :class:`UsageError` when ``fn`` cannot be one."""
    if not callable(fn):
        raise UsageError(f"a tool must be a function, got {fn!r}")
    label = getattr(fn, "__qualname__", repr(fn))
    tool_name = str(name or getattr(fn, "__name__", ""))
    if not _NAME.match(tool_name):
        raise UsageError(
            f"tool {label}: the name {tool_name!r} is not allowed; use 1 to 64 letters, "
            "digits, '_' or '-'"
        )
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    params_doc = {p.arg_name: p.description or "" for p in doc.params}
    parameters = list(inspect.signature(fn).parameters.values())
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise UsageError(f"tool {label}: its type hints cannot be read: {exc}") from exc
    takes_context = bool(parameters) and hints.get(parameters[0].name) is ToolContext
    if takes_context:
        parameters = parameters[1:]
    fields: dict[str, Any] = {}
    for param in parameters:
        fields[param.name] = _field(label, param, hints, params_doc.get(param.name, ""))
    arguments = create_model(
        f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    try:
        schema = arguments.model_json_schema()
    except Exception as exc:
        raise UsageError(f"tool {label}: its parameters have no JSON schema: {exc}") from exc
    schema.pop("title", None)
    description: str = "\n\n".join(
        part for part in (doc.short_description, doc.long_description) if part
    )
    run = _runner(fn, arguments, takes_context, [p.name for p in parameters])
    return Tool(
        name=tool_name,
        description=description or tool_name,
        parameters=schema,
        run=run,
        requires_approval=requires_approval,
    )


def _field(
    label: str, param: inspect.Parameter, hints: dict[str, Any], description: str
) -> tuple[Any, Any]:
    where = f"tool {label}: parameter {param.name!r}"
    if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
        raise UsageError(f"{where}: *args and **kwargs cannot be described; name each parameter")
    if param.name not in hints:
        raise UsageError(f"{where} has no type hint; add one (e.g. {param.name}: str)")
    annotation = hints[param.name]
    if annotation is ToolContext:
        raise UsageError(f"{where}: only the first parameter may take the ToolContext")
    try:
        TypeAdapter(annotation).json_schema()
    except Exception as exc:
        raise UsageError(
            f"{where}: its type {annotation!r} has no JSON schema ({type(exc).__name__}); "
            "use a JSON type, a pydantic model or a dataclass"
        ) from exc
    default = ... if param.default is param.empty else param.default
    return annotation, Field(default, description=description or None)


def _runner(
    fn: Callable[..., Any], arguments: type[BaseModel], takes_context: bool, names: list[str]
) -> Callable[[ToolContext | None, dict[str, Any]], Any]:
    is_async = inspect.iscoroutinefunction(fn)

    async def run(ctx: ToolContext | None, raw: dict[str, Any]) -> Any:
        checked = arguments.model_validate(raw)  # a ValidationError goes back to the model
        kwargs = {name: getattr(checked, name) for name in names}
        args = (ctx,) if takes_context else ()
        if is_async:
            return await fn(*args, **kwargs)
        # A plain function may block: it runs in a thread, off the event loop.
        return await asyncio.to_thread(fn, *args, **kwargs)

    return run
