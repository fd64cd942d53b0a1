"""The LLM client: one ``openai`` SDK client for chat, structured output and embeddings."""

from __future__ import annotations

from liz.llm.client import BooleanAnswer, LLMClient, Size
from liz.llm.errors import LLMOutputError
from liz.llm.messages import ChatMessage, Prompt

__all__ = ["BooleanAnswer", "ChatMessage", "LLMClient", "LLMOutputError", "Prompt", "Size"]
