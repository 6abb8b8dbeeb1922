"""One LLM call of the repair loop, within its budgets: the call and time limits, a retry sampled warmer, the
reply's token cap, and what the client's errors mean (Stop: the loop ends early; else why there is no reply)."""

from __future__ import annotations

import time

from bot.llm import BudgetExhausted, LLMBadOutput, LLMError
from bot.llm.protocol import JsonLLM
from bot.llm.types import JsonReply
from bot.repair.plan import PLAN_SCHEMA
from bot.repair.setup import Limits, budget_spent


class Stop(Exception):
    """End the loop early, keeping what was proven (budget spent, LLM unusable)."""


def check_budget(limits: Limits, config_max_calls: int | None, *, requests: int, started: float) -> None:
    """Raises Stop when `requests` calls spent the call budget or the time since `started` the time budget."""
    if requests >= limits.max_llm_calls:
        raise Stop(budget_spent(limits, config_max_calls))
    seconds = limits.max_seconds
    if seconds is not None and time.monotonic() - started > seconds:
        raise Stop(f"time budget spent ({seconds:g} s)")


def request_plan(
    client: JsonLLM,
    limits: Limits,
    messages: list[dict],
    purpose: str,
    *,
    n: int,
    room: int | None,
    config_max_calls: int | None,
) -> tuple[JsonReply | None, str]:
    """(reply, why there is none). Raises Stop when the budget is spent or the LLM is unusable. `n`: the attempt
    (a retry samples warmer); `room`: the reply's token cap."""
    base = client.settings.temperature
    temperature = base if n == 1 else max(base, limits.retry_temperature)
    try:
        reply = client.complete_json(
            messages,
            schema=PLAN_SCHEMA,
            required=("status", "actions"),
            purpose=purpose,
            attempt=n,
            temperature=temperature,
            max_tokens=room or limits.plan_tokens,
        )
    except BudgetExhausted as exc:
        raise Stop(budget_spent(limits, config_max_calls, exc.message)) from None
    except LLMBadOutput as exc:
        return None, f"your reply was not usable JSON: {exc.message}"
    except LLMError as exc:
        raise Stop(f"LLM error: {exc.message}") from None
    return reply, ""
