"""The decision code's process-wide caches, emptied between tests (tests/conftest.py's autouse fixture).

A cache filled by one test answers the next one from what an earlier version of the code computed: under mutation
testing (benchmarks/mutation) the forked test process inherits the clean run's caches, so a mutant would never run;
and a test that reads a cached answer is not recorded as covering the function. tests/unit/test_caches.py checks
that every `lru_cache` of bot/scoring and bot/compare is listed here.
"""

from __future__ import annotations

from typing import Any


def decision_caches() -> list[Any]:
    from bot.scoring import order

    return [order._parse, order.order_info, order.with_limit, order.with_order_keys, order.without_distinct]


def clear_decision_caches() -> None:
    for cached in decision_caches():
        cached.cache_clear()
