"""The one LLM client: text, structured output, booleans, streams, images and embeddings.

It talks to any OpenAI-compatible endpoint through the ``openai`` SDK: OpenAI itself,
OpenRouter, a local Ollama or vLLM, or ``liz.testing.openai_server.ScriptedOpenAI`` in tests.
The SDK retries 408/409/429/5xx and connection errors itself (``max_retries``); whatever
still fails leaves this module as a :class:`liz.errors.LLMError`.

Example::

    llm = LLMClient.from_settings(Settings())
    reply = await llm.text("Say hi", system="You are terse.", size="small")
    plan = await llm.structured("Plan a picnic", Plan)  # a validated Plan instance
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt
from openai import AsyncOpenAI
from pydantic import BaseModel

from liz.errors import UsageError
from liz.llm.calls import (
    TextSink,
    ToolStep,
    complete,
    embed_batch,
    embed_batch_float32,
    stream_deltas,
    tool_step,
)
from liz.llm.endpoint import endpoint_from_settings
from liz.llm.errors import LLMOutputError
from liz.llm.messages import Prompt, build_messages
from liz.llm.output import parse_answer, refusal_note
from liz.llm.schema import response_schema, schema_name
from liz.prompts.templates import PromptTemplates, default_templates

if TYPE_CHECKING:
    import httpx

    from liz.config import Settings

log = logging.getLogger(__name__)

Size = Literal["small", "large"]
StructuredMode = Literal["json_schema", "json_object"]
ModelT = TypeVar("ModelT", bound=BaseModel)


class BooleanAnswer(BaseModel):
    """A yes/no decision with the model's reasons."""

    value: bool
    explanation: str


class LLMClient:
    """Calls one OpenAI-compatible endpoint with a small and a large chat model.

    ``structured_mode`` is ``"json_schema"`` (the endpoint enforces the schema) or
    ``"json_object"`` for endpoints that only offer JSON mode; then the schema is put
    in the system message. Either way the answer is validated with pydantic.
    """

    def __init__(
        self,
        openai: AsyncOpenAI,
        *,
        small_model: str,
        large_model: str,
        embedding_model: str,
        structured_mode: StructuredMode = "json_schema",
        templates: PromptTemplates | None = None,
        embedding_batch_size: int = 512,
    ) -> None:
        if structured_mode not in ("json_schema", "json_object"):
            raise UsageError(
                f"structured_mode {structured_mode!r} is unknown; "
                "use 'json_schema' or 'json_object'"
            )
        if embedding_batch_size < 1:
            raise UsageError("embedding_batch_size must be at least 1")
        self.openai = openai
        self.small_model = small_model
        self.large_model = large_model
        self.embedding_model = embedding_model
        self.structured_mode: StructuredMode = structured_mode
        self.templates = templates or default_templates
        self.embedding_batch_size = embedding_batch_size

    @classmethod
    def from_settings(
        cls, settings: Settings, http_client: httpx.AsyncClient | None = None
    ) -> LLMClient | None:
        """A client configured from settings, or None when no key and no base URL are set.

        :func:`liz.llm.endpoint.endpoint_from_settings` says which endpoint and models
        (``LIZ_SCRIPTED_LLM`` is read by :func:`liz.runtime.bootstrap.llm_from_settings`).
        """
        endpoint = endpoint_from_settings(settings)
        if endpoint is None:
            return None
        return cls(
            endpoint.open(http_client),
            small_model=endpoint.small_model,
            large_model=endpoint.large_model,
            embedding_model=endpoint.embedding_model,
            structured_mode=settings.liz_structured_output,
            templates=PromptTemplates(settings.liz_prompts_dir),
        )

    def model_for(self, size: Size) -> str:
        """The chat model name for ``"small"`` or ``"large"``."""
        if size == "small":
            return self.small_model
        if size == "large":
            return self.large_model
        raise UsageError(f"size {size!r} is unknown; use 'small' or 'large'")

    async def text(
        self,
        prompt: Prompt,
        *,
        system: str | None = None,
        size: Size = "large",
        image_urls: Sequence[str] = (),
        model: str | None = None,
        temperature: float | None = None,
    ) -> str:
        """The model's text answer to ``prompt`` (a string or a list of messages)."""
        messages = build_messages(prompt, system=system, image_urls=image_urls)
        chosen = model or self.model_for(size)
        answer = await complete(self.openai, chosen, messages, temperature=temperature)
        if not answer.text:
            raise LLMOutputError(
                f"the model {chosen} returned an empty answer{refusal_note(answer)}"
            )
        return answer.text

    async def structured(
        self,
        prompt: Prompt,
        schema: type[ModelT],
        *,
        system: str | None = None,
        size: Size = "large",
        image_urls: Sequence[str] = (),
        model: str | None = None,
        temperature: float | None = None,
    ) -> ModelT:
        """The answer as a validated ``schema`` instance.

        An answer that is empty, not JSON, or not of the schema is shown back to the
        model with what is wrong, once; a second bad answer raises ``LLMOutputError``.
        """
        json_schema, strict = response_schema(schema)
        name = schema_name(schema)
        if self.structured_mode == "json_object":
            instructions = self.templates.render(
                "llm_json_instructions.j2",
                schema_name=name,
                schema=json.dumps(json_schema, indent=2),
            )
            system = f"{system}\n\n{instructions}" if system else instructions
            response_format: dict[str, Any] = {"type": "json_object"}
        else:
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": json_schema, "strict": strict},
            }
        messages = build_messages(prompt, system=system, image_urls=image_urls)
        chosen = model or self.model_for(size)
        problem = ""
        content = ""
        for attempt in (1, 2):
            answer = await complete(
                self.openai,
                chosen,
                messages,
                temperature=temperature,
                response_format=response_format,
            )
            content = answer.text
            parsed, problem = parse_answer(answer, schema)
            if parsed is not None:
                return parsed
            log.info("model %s gave unusable %s (attempt %d): %s", chosen, name, attempt, problem)
            repair = self.templates.render(
                "llm_output_repair.j2", problem=problem, schema_name=name
            )
            messages = [
                *messages,
                {"role": "assistant", "content": content},
                {"role": "user", "content": repair},
            ]
        raise LLMOutputError(
            f"the model {chosen} did not return a valid {name} after a retry: {problem}",
            output=content,
        )

    async def boolean(
        self,
        question: Prompt,
        *,
        system: str | None = None,
        size: Size = "small",
        image_urls: Sequence[str] = (),
        model: str | None = None,
    ) -> BooleanAnswer:
        """A yes/no decision on ``question``, with the model's explanation."""
        instructions = self.templates.render("llm_boolean.j2")
        system = f"{system}\n\n{instructions}" if system else instructions
        return await self.structured(
            question, BooleanAnswer, system=system, size=size, image_urls=image_urls, model=model
        )

    async def stream(
        self,
        prompt: Prompt,
        *,
        system: str | None = None,
        size: Size = "large",
        image_urls: Sequence[str] = (),
        model: str | None = None,
        temperature: float | None = None,
    ) -> AsyncIterator[str]:
        """The answer as it is generated, one text delta at a time.

        Example::

            async for delta in llm.stream("Tell a story"):
                print(delta, end="")
        """
        messages = build_messages(prompt, system=system, image_urls=image_urls)
        chosen = model or self.model_for(size)
        async for delta in stream_deltas(self.openai, chosen, messages, temperature=temperature):
            yield delta

    async def tool_step(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        size: Size = "large",
        on_text: TextSink | None = None,
    ) -> ToolStep:
        """One request offering ``tools`` (chat API ``tools`` entries) on ``messages`` as
        given: the text and the calls the model asked for. Streamed when ``on_text`` is set.
        """
        return await tool_step(self.openai, self.model_for(size), messages, tools, on_text=on_text)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One embedding vector per text, in the order given."""
        vectors: list[list[float]] = []
        for batch in self._embedding_batches(texts, "embed"):
            vectors.extend(await embed_batch(self.openai, self.embedding_model, batch))
        return vectors

    async def embed_float32(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        """One embedding per text, in the order given, as float32 numpy arrays.

        Cheaper than :meth:`embed` for long vectors (sent as base64, decoded by numpy);
        the numbers are float32, as vector stores keep them.
        """
        vectors: list[npt.NDArray[np.float32]] = []
        for batch in self._embedding_batches(texts, "embed_float32"):
            vectors.extend(await embed_batch_float32(self.openai, self.embedding_model, batch))
        return vectors

    def _embedding_batches(self, texts: Sequence[str], method: str) -> list[list[str]]:
        if isinstance(texts, str):
            raise UsageError(f"{method}() takes a list of texts; wrap a single text as [text]")
        for index, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                raise UsageError(f"text {index} is empty; embeddings need some text")
        size = self.embedding_batch_size
        return [list(texts[start : start + size]) for start in range(0, len(texts), size)]

    async def close(self) -> None:
        """Close the HTTP connections (the injected ``http_client`` too)."""
        await self.openai.close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
