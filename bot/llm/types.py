"""What an LLM call returns, in process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sampling:
    """How one request samples. `seed` goes with a temperature above 0: the attempt number, so a repeat or a
    retry is reproducible on a server that honours it (llama.cpp, vLLM, Ollama; OpenAI on a best-effort basis)
    and two attempts still differ."""

    temperature: float
    max_tokens: int | None
    seed: int | None = None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0  # requests sent to the endpoint (retries and re-asks included)
    cached_calls: int = 0  # answers served from the on-disk cache: no request, no budget
    cost_usd: float | None = 0.0  # None: the model has no price in the config's price table

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            calls=self.calls + other.calls,
            cached_calls=self.cached_calls + other.cached_calls,
            cost_usd=cost,
        )


@dataclass(frozen=True)
class TextReply:
    text: str
    usage: Usage
    cached: bool


@dataclass(frozen=True)
class JsonReply:
    data: dict[str, Any]
    raw: str
    usage: Usage  # of this reply (all its requests), not of the client
    cached: bool
    parse_repaired: bool


@dataclass(frozen=True)
class ParseStats:
    ok: int = 0
    repaired: int = 0
    failed: int = 0

    def __iter__(self):  # unpacks as (ok, repaired, failed)
        return iter((self.ok, self.repaired, self.failed))

    @property
    def success_rate(self) -> float | None:
        total = self.ok + self.repaired + self.failed
        return None if total == 0 else (self.ok + self.repaired) / total
