"""Estimated cost from the config's price table (US dollars per 1,000 tokens)."""

from __future__ import annotations

from collections.abc import Mapping

from bot.config.llm import Price


def find_price(prices: Mapping[str, Price], model: str) -> Price | None:
    """An exact model name, else the longest table entry the model name starts with ("gpt-4o" for
    "gpt-4o-2024-08-06")."""
    if model in prices:
        return prices[model]
    prefixes = [name for name in prices if model.startswith(name)]
    return prices[max(prefixes, key=len)] if prefixes else None


def estimate_cost(
    prices: Mapping[str, Price], model: str, *, prompt_tokens: int, completion_tokens: int
) -> float | None:
    price = find_price(prices, model)
    if price is None:
        return None
    return round(
        prompt_tokens / 1000 * price.input_per_1k + completion_tokens / 1000 * price.output_per_1k, 8
    )
