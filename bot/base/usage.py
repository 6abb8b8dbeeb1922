"""What an answer cost and what its query costs, per case, and their totals over a run.

- `AnswerUsage`: the agent's own account of one answer (an agent's reply may carry `usage`; the built-in `llm`
  agent fills it): its model, LLM calls, prompt and completion tokens, cost in USD. Every field is optional and
  bounded; an agent that reports nothing has none.
- `QueryCost`: the planner's estimate for a query case whose prediction ran (EXPLAIN, nothing runs): the plan's
  total cost and the rows its scans read, of the prediction and of the gold.
- `UsageTotals`: a run's sums (over the answers that reported them), as its summary keeps them; shards merge by
  summing their cases again.
- `LLMUsage`: what the LLM calls of a run's built-in agent or judge cost, as the LLM client counted them."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from bot.base.frozen import FrozenModel

MAX_CALLS = 1_000_000  # per answer: far above any agent's loop, below anything that overflows a sum
MAX_TOKENS = 1_000_000_000
MAX_COST_USD = 1_000_000.0


class AnswerUsage(FrozenModel):
    model: str | None = Field(default=None, max_length=200)
    llm_calls: int | None = Field(default=None, ge=0, le=MAX_CALLS)
    prompt_tokens: int | None = Field(default=None, ge=0, le=MAX_TOKENS)
    completion_tokens: int | None = Field(default=None, ge=0, le=MAX_TOKENS)
    cost_usd: float | None = Field(default=None, ge=0, le=MAX_COST_USD, allow_inf_nan=False)

    @property
    def tokens(self) -> int | None:
        """Prompt and completion tokens together; None when the agent reported neither."""
        parts = [t for t in (self.prompt_tokens, self.completion_tokens) if t is not None]
        return sum(parts) if parts else None


class QueryCost(FrozenModel):
    prediction: float | None = None
    gold: float | None = None
    prediction_rows: float | None = None  # rows the prediction's scans read, as the planner estimates them
    gold_rows: float | None = None


class UsageTotals(FrozenModel):
    answers: int = 0  # answers that reported usage
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None  # None: no answer reported a cost

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class LLMUsage(FrozenModel):
    """What a run's LLM calls cost (the `llm` agent, and the `--llm-judge`): requests sent (retries and re-asks
    included), replies served from the cache, tokens, estimated cost (None: the model has no price in
    `llm.prices`), and how the replies parsed (as sent, repaired from fences or prose, unusable)."""

    model: str = ""
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    parse_ok: int = 0
    parse_repaired: int = 0
    parse_failed: int = 0


def total_usage(usages: Iterable[AnswerUsage | None]) -> UsageTotals | None:
    """The sums over the answers that reported usage; None when none did."""
    seen = [u for u in usages if u is not None]
    if not seen:
        return None
    costs = [u.cost_usd for u in seen if u.cost_usd is not None]
    return UsageTotals(
        answers=len(seen),
        llm_calls=sum(u.llm_calls or 0 for u in seen),
        prompt_tokens=sum(u.prompt_tokens or 0 for u in seen),
        completion_tokens=sum(u.completion_tokens or 0 for u in seen),
        cost_usd=round(sum(costs), 6) if costs else None,
    )
