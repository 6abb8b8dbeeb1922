"""Every cache of the verdict code is emptied between tests (tests/support/caches.py says why)."""

from __future__ import annotations

import importlib
import pkgutil

import bot.compare
import bot.scoring
from tests.support.caches import clear_decision_caches, decision_caches


def test_every_lru_cache_of_the_decision_code_is_listed() -> None:
    found = {}
    for package in (bot.scoring, bot.compare):
        for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if callable(getattr(value, "cache_clear", None)) and value.__module__ == info.name:
                    found[id(value)] = f"{info.name}.{name}"
    assert found, "no lru_cache found: the scan is broken"
    listed = {id(f) for f in decision_caches()}
    assert sorted(found[i] for i in found.keys() - listed) == []
    assert listed <= found.keys()


def test_the_caches_are_empty_when_a_test_starts() -> None:
    from bot.scoring.order import order_info

    assert all(f.cache_info().currsize == 0 for f in decision_caches())
    order_info("SELECT 1 ORDER BY 1")
    assert order_info.cache_info().currsize == 1
    clear_decision_caches()
    assert order_info.cache_info().currsize == 0
