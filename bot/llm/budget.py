"""Budgets of calls and tokens per run: a call that would exceed them is never sent."""

from __future__ import annotations

import threading

from bot.llm.errors import BudgetExhausted


def estimate_tokens(text: str) -> int:
    """A rough upper-ish estimate (4 characters a token) used only to refuse calls before sending them."""
    return len(text) // 4 + 1


class Budget:
    """Thread-safe counters; `reserve` before each request, `record` the tokens its reply reports."""

    def __init__(self, *, max_calls: int | None = None, max_tokens: int | None = None) -> None:
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.calls = 0
        self.tokens = 0
        self._lock = threading.Lock()

    def reserve(self, *, expected_tokens: int = 0, purpose: str = "") -> None:
        """Count one request, or raise BudgetExhausted (and count nothing) if it could exceed the budget."""
        what = f" for {purpose}" if purpose else ""
        with self._lock:
            if self.max_calls is not None and self.calls + 1 > self.max_calls:
                raise BudgetExhausted(
                    f"LLM call budget exhausted: {self.calls} of {self.max_calls} call(s) used; "
                    f"the next call{what} was not sent (raise llm.budget.max_calls)"
                )
            if self.max_tokens is not None and self.tokens + expected_tokens > self.max_tokens:
                raise BudgetExhausted(
                    f"LLM token budget exhausted: {self.tokens} of {self.max_tokens} token(s) used and the next "
                    f"call{what} may use up to {expected_tokens}; it was not sent (raise llm.budget.max_tokens)"
                )
            self.calls += 1

    def record(self, tokens: int) -> None:
        with self._lock:
            self.tokens += max(0, tokens)
