"""Run one call the model asked for; whatever goes wrong becomes an error the model can read."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from pydantic import (
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)
from pydantic_core import PydanticSerializationError, to_jsonable_python

from liz.llm.calls import RequestedCall
from liz.observe.tools import observe_tool_call
from liz.tools.context import ToolContext
from liz.types import Body, Tool

logger = logging.getLogger(__name__)


class CallOutcome(Body):
    """One tool call of the turn: its result when ok, else the error the model was sent."""

    # Kept in the trace, the conversation log and the approvals, as JSON.

    model_config = ConfigDict(frozen=True, validate_by_alias=True)

    id: str = Field(description="The call's id")
    name: str = Field(description="The tool")
    # The parsed arguments, or the raw text when it was not JSON.
    arguments: Any = Field(description="The arguments as the model wrote them")
    ok: bool = Field(description="Whether the call gave a result")
    result: Any = Field(None, description="The tool's result (when ok)")
    error: str | None = Field(None, description="What went wrong (when not ok)")
    duration_ms: float = Field(0.0, description="How long the call took, in milliseconds")

    # No return annotation: the API document then shows the fields, not "any JSON".
    @model_serializer(mode="wrap")
    def _sent(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        body = handler(self)
        body.pop("error" if self.ok else "result", None)  # a result, or an error: never both
        if "durationMs" in body:
            body["durationMs"] = round(self.duration_ms, 3)
        return body

    def message(self) -> dict[str, Any]:
        """The ``tool`` message that answers the call."""
        content = self.result if self.ok else {"error": self.error}
        return {"role": "tool", "tool_call_id": self.id, "content": json.dumps(content)}

    def result_event(self) -> dict[str, Any]:
        """The ``tool_result`` event's data (``ToolResultEvent``)."""
        return self.model_dump(mode="json", by_alias=True, include={"id", "ok", "result", "error"})


def parsed_arguments(call: RequestedCall) -> Any:
    """The call's arguments as JSON; the raw text when they are not JSON."""
    try:
        return json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        return call.arguments


def refused(call: RequestedCall, error: str, ctx: ToolContext) -> CallOutcome:
    """A call answered with ``error`` without running anything."""
    with observe_tool_call(ctx.trace, call.name, call.id) as ended:
        arguments = parsed_arguments(call)
        return ended(
            CallOutcome(id=call.id, name=call.name, arguments=arguments, ok=False, error=error)
        )


async def run_call(
    call: RequestedCall,
    tool: Tool | None,
    ctx: ToolContext,
    known: list[str],
    timeout: float,
) -> CallOutcome:
    """Run ``call`` on ``tool`` (None: the model made the name up) within ``timeout`` seconds."""
    with observe_tool_call(ctx.trace, call.name, call.id) as ended:
        return ended(await _run_call(call, tool, ctx, known, timeout))


async def _run_call(
    call: RequestedCall,
    tool: Tool | None,
    ctx: ToolContext | None,
    known: list[str],
    timeout: float,
) -> CallOutcome:
    arguments = parsed_arguments(call)
    started = time.perf_counter()

    def done(ok: bool, result: Any = None, error: str | None = None) -> CallOutcome:
        took = (time.perf_counter() - started) * 1000
        return CallOutcome(
            id=call.id,
            name=call.name,
            arguments=arguments,
            ok=ok,
            result=result,
            error=error,
            duration_ms=took,
        )

    if tool is None:
        names = ", ".join(known) or "none"
        return done(False, error=f"there is no tool named {call.name!r}; the tools are: {names}")
    if not isinstance(arguments, dict):
        return done(False, error="the arguments must be a JSON object of the tool's parameters")
    try:
        value = await asyncio.wait_for(tool.run(ctx, arguments), timeout)
    except ValidationError as exc:
        return done(False, error=f"the arguments do not fit {call.name}: {_problems(exc)}")
    except TimeoutError:
        return done(False, error=f"{call.name} did not finish within {timeout:g} seconds")
    except Exception as exc:
        logger.info("tool %s failed: %s: %s", call.name, type(exc).__name__, exc)
        return done(False, error=f"{call.name} failed: {type(exc).__name__}: {exc}")
    try:
        result = to_jsonable_python(value)
        json.dumps(result)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        return done(False, error=f"{call.name} returned a value that is not JSON: {exc}")
    return done(True, result)


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in error['loc']) or 'arguments'}: {error['msg']}"
        for error in exc.errors()
    )
