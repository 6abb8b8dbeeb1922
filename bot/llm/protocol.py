"""The LLM client as the repair loop and the usage report see it: a role, not a class (bot.llm.client.LLMClient
is the one implementation; tests may bring their own)."""

from __future__ import annotations

from typing import Protocol

from bot.config.llm import LLMSettings
from bot.llm.budget import Budget
from bot.llm.types import JsonReply, ParseStats, Usage


class JsonLLM(Protocol):
    """Asks for one JSON object under a schema; keeps its usage, parse statistics and call budget."""

    settings: LLMSettings
    budget: Budget

    @property
    def usage(self) -> Usage: ...

    @property
    def parse_stats(self) -> ParseStats: ...

    def complete_json(
        self,
        messages: list[dict],
        *,
        schema: dict,
        required: tuple[str, ...] = (),
        purpose: str = "",
        attempt: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> JsonReply: ...
