"""The LLM layer: one OpenAI-compatible client (`LLMClient`), strict JSON parsing with a narrow fallback, a
content-addressed reply cache, budgets and usage. `LLMClient` is imported lazily: loading the config must not
import the openai package."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.config.llm import LLMSettings
from bot.llm.errors import BudgetExhausted, LLMBadOutput, LLMContextTooLong, LLMError, LLMUnavailable, redact
from bot.llm.types import JsonReply, ParseStats, TextReply, Usage

if TYPE_CHECKING:
    from bot.llm.client import LLMClient

__all__ = [
    "BudgetExhausted",
    "JsonReply",
    "LLMBadOutput",
    "LLMClient",
    "LLMContextTooLong",
    "LLMError",
    "LLMSettings",
    "LLMUnavailable",
    "ParseStats",
    "TextReply",
    "Usage",
    "redact",
]


def __getattr__(name: str) -> Any:
    if name == "LLMClient":
        from bot.llm.client import LLMClient

        return LLMClient
    raise AttributeError(name)
