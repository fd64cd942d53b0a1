"""liz's scripted model: a stand-in LLM for trying liz, and other tools, without a key.

Every reply starts with :data:`SCRIPTED_PREFIX` so no one takes it for a model's words.
The calls the framework makes for itself get sensible answers: the router picks the
conversation route, extraction keeps each first-person sentence of the user ("I ...",
"My ...") as a fact, reconciliation adds what is new. Embeddings are ScriptedOpenAI's
deterministic bag of words.

It calls a tool when the user's message says so, in this form (docs/tools.md)::

    call order_status {"id": "A1"}

and once the tool has answered, replies with what it returned.
"""

from __future__ import annotations

import json
import re
from typing import Any

from liz.testing.openai_requests import Answer, RecordedRequest, call_tool
from liz.testing.openai_server import ScriptedOpenAI

SCRIPTED_PREFIX = "[scripted reply]"
_FIRST_PERSON = re.compile(r"^(i|i'm|i am|my|i've|we|our)\b", re.IGNORECASE)
_MESSAGE = re.compile(r'<MESSAGE number="(\d+)">(.*?)</MESSAGE>', re.DOTALL)
_LISTED_FACT = re.compile(r"^(\d+)\. \[[^\]]*\] (.+)$", re.MULTILINE)
_CURRENT_INPUT = re.compile(r"<CURRENT_USER_INPUT>(.*?)</CURRENT_USER_INPUT>", re.DOTALL)
_RECALLED = re.compile(r"<USER_FACTS>(.*?)</USER_FACTS>", re.DOTALL)
_ROUTE = re.compile(r"^- ([\w.-]+): ", re.MULTILINE)
# "call NAME" or "call NAME {json arguments}": the whole message asks for one tool call.
_CALL = re.compile(r"^call\s+([\w.-]+)\s*(\{.*\})?$", re.DOTALL | re.IGNORECASE)


def scripted_model() -> ScriptedOpenAI:
    """A :class:`ScriptedOpenAI` that answers every request as the scripted model."""
    server = ScriptedOpenAI()
    server.respond_with(answer)
    return server


def answer(request: RecordedRequest) -> Answer:
    """The scripted model's answer to one chat request."""
    prompt = request.prompt
    kind = request.schema_name or _kind_from_prompt(prompt)
    if kind == "RouteChoice":
        return _route(prompt)
    if kind == "ExtractedFacts":
        return {"facts": _facts(prompt)}
    if kind == "ReconcilePlan":
        return {"decisions": _decisions(prompt)}
    if kind == "ShouldRespond":
        return {"decision": "RESPOND", "reason": f"{SCRIPTED_PREFIX} every mention is answered"}
    if kind == "BooleanAnswer":
        return {"value": True, "explanation": f"{SCRIPTED_PREFIX} always yes"}
    if request.messages and request.messages[-1].get("role") == "tool":
        return _tool_results(request)
    if request.tool_names and (asked := _CALL.match(_current_input(_last_user_text(request)))):
        return _tool_call(request, asked.group(1), asked.group(2))
    return _reply(_last_user_text(request))


def _current_input(user_text: str) -> str:
    current = _CURRENT_INPUT.search(user_text)
    return " ".join((current.group(1) if current else user_text).split())


def _tool_call(request: RecordedRequest, name: str, arguments: str | None) -> Answer:
    """Call the tool the user named, if the request offers it and the arguments are JSON."""
    if name not in request.tool_names:
        offered = ", ".join(request.tool_names)
        return f"{SCRIPTED_PREFIX} There is no tool {name!r} here; the tools are: {offered}."
    try:
        parsed = json.loads(arguments) if arguments else {}
    except ValueError:
        return f"{SCRIPTED_PREFIX} The arguments for {name} are not JSON: {arguments}"
    if not isinstance(parsed, dict):
        return f"{SCRIPTED_PREFIX} The arguments for {name} must be a JSON object."
    return call_tool(name, parsed, text=f"{SCRIPTED_PREFIX} Calling {name}.")


def _tool_results(request: RecordedRequest) -> str:
    """After the tools answered: say what each returned, as a model would sum it up."""
    results = []
    for message in reversed(request.messages):
        if message.get("role") != "tool":
            break
        results.append(str(message.get("content") or ""))
    said = "; ".join(reversed(results))
    return f"{SCRIPTED_PREFIX} The tool answered: {said}"


def _reply(user_text: str) -> str:
    """Echo the input; name the facts recalled, so recall can be seen working."""
    said = _current_input(user_text)
    if len(said) > 120:
        said = said[:119] + "…"
    reply = f'{SCRIPTED_PREFIX} You said: "{said}".' if said else f"{SCRIPTED_PREFIX} Hello."
    remembered = _RECALLED.search(user_text)
    if remembered:
        facts = [line[2:].strip() for line in remembered.group(1).splitlines() if line[:2] == "- "]
        reply += f" I remember: {'; '.join(facts)}."
    return reply + " (Set OPENAI_API_KEY for a real model.)"


def _kind_from_prompt(prompt: str) -> str | None:
    """JSON mode names no schema; the framework's prompts say which answer they want."""
    markers = {
        '{"facts":': "ExtractedFacts",
        '{"decisions":': "ReconcilePlan",
        "Pick exactly one of these routes": "RouteChoice",
    }
    return next((kind for marker, kind in markers.items() if marker in prompt), None)


def _route(prompt: str) -> dict[str, Any]:
    routes = _ROUTE.findall(prompt)
    chosen = "conversation" if "conversation" in routes or not routes else routes[0]
    return {"route": chosen, "confidence": 1.0, "reasoning": f"{SCRIPTED_PREFIX} the first fit"}


def _facts(prompt: str) -> list[dict[str, Any]]:
    facts = []
    for number, block in _MESSAGE.findall(prompt):
        for line in block.splitlines():
            said = line.strip().removeprefix("user:").strip()
            if not line.strip().startswith("user:"):
                continue
            for sentence in re.split(r"(?<=[.!?])\s+", said):
                if _FIRST_PERSON.match(sentence):
                    text = f"User said: {sentence.rstrip('.!?')}"[:400]
                    facts.append(
                        {
                            "message": int(number),
                            "text": text,
                            "subject": "user",
                            "categories": ["scripted", "statement"],
                        }
                    )
    return facts


def _decisions(prompt: str) -> list[dict[str, Any]]:
    stored_part, _, new_part = prompt.partition("New facts")
    stored = {text.strip(): int(number) for number, text in _LISTED_FACT.findall(stored_part)}
    decisions = []
    for number, text in _LISTED_FACT.findall(new_part.partition("For every new fact")[0]):
        same = stored.get(text.strip())
        decisions.append(
            {
                "new_fact": int(number),
                "event": "NOOP" if same is not None else "ADD",
                "id": same,
                "text": None if same is not None else text.strip(),
                "categories": None if same is not None else ["scripted", "statement"],
                "reason": f"{SCRIPTED_PREFIX} {'already known' if same else 'new'}",
            }
        )
    return decisions


def _last_user_text(request: RecordedRequest) -> str:
    for message in reversed(request.messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                parts = [p.get("text", "") for p in content if isinstance(p, dict)]
                return " ".join(str(part) for part in parts)
    return ""
