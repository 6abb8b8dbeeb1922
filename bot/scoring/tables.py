"""Comparing two result sets under sqlcanary's rules (VERDICTS.md): multisets of typed rows, columns matched
by position, by name or by value signature and then verified row by row, order checked on the ORDER BY key only.

The public face: the comparison itself is a fold over small named rules, table_rules.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.base.results import ResultSet
from bot.scoring.row_matching import OrderCheck
from bot.scoring.table_options import TableOptions
from bot.scoring.table_rules import RULES
from bot.scoring.table_state import Comparison, TableVerdict

__all__ = ["OrderCheck", "TableOptions", "TableVerdict", "compare_tables"]  # the options are compare_tables's


def compare_tables(
    gold: ResultSet,
    pred: ResultSet,
    *,
    opts: TableOptions,
    order: OrderCheck | None = None,
    keys: Callable[[], Sequence[tuple[int, ...]]] | None = None,
) -> TableVerdict:
    """The verdict of the first rule that decides, applying the rules of table_rules.py in their order (RULES).

    `keys` gives candidate row keys from the gold's SQL (gold column positions); called only to explain a
    mismatch, so a passing case never pays for it."""
    comparison = Comparison(gold, pred, opts, order, keys)
    for rule in RULES:
        verdict = rule(comparison)
        if verdict is not None:
            return verdict
    raise AssertionError("the last rule of RULES always decides")
