"""Counts in the repair prompt, as English: "1 row", "2 rows", never "row(s)"."""

from __future__ import annotations


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def rows_in_words(gold: int, pred: int) -> str:
    """ "the gold returns 1 row and the agent's SQL 3 rows"; equal counts say where the difference is instead."""
    if gold == pred:
        return (
            f"the gold returns {_rows(gold)} and the agent's SQL {pred} as well, but their values or columns "
            "differ (see the first difference)"
        )
    return f"the gold returns {_rows(gold)} and the agent's SQL {_rows(pred)}"
