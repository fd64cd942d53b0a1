"""Reading a chat answer for a caller: JSON validated against a model, a refusal told."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from liz.llm.calls import ChatAnswer

ModelT = TypeVar("ModelT", bound=BaseModel)


def refusal_note(answer: ChatAnswer) -> str:
    """ " (it refused: ...)" when the model refused, else "" (for error messages)."""
    return f" (it refused: {answer.refusal})" if answer.refusal else ""


def parse_answer(answer: ChatAnswer, schema: type[ModelT]) -> tuple[ModelT | None, str]:
    """The validated answer, or None and what is wrong with it in words the model can act on."""
    text = _strip_code_fence(answer.text)
    if not text:
        return None, f"the answer was empty{refusal_note(answer)}"
    try:
        return schema.model_validate_json(text), ""
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(part) for part in error['loc']) or 'the answer'}: {error['msg']}"
            for error in exc.errors(include_url=False)
        ]
        return None, "; ".join(problems)


def _strip_code_fence(content: str) -> str:
    # Models in JSON-mode-only setups like to wrap JSON in ```json fences.
    text = content.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        text = text[3:-3]
        first_line, _, rest = text.partition("\n")
        text = rest if first_line.strip().isalpha() or not first_line.strip() else text
    return text.strip()
