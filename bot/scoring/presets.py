"""Comparison functions that reproduce the official evaluators on the same result pairs (VERDICTS.md table).

They are here so that a side-by-side check is a unit test, and so a team can score a suite the way a public
leaderboard would. They keep those evaluators' known flaws on purpose; the default preset is `sqlcanary`.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bot.cases.model import PRESET_NAMES
from bot.results import ResultSet
from bot.scoring.values import normalize_value, sort_key

PRESETS = PRESET_NAMES


class EvaluatorError(Exception):
    """The reproduced evaluator would crash on this pair (it then counts the case as wrong)."""


def _hashable_rows(rows: list[tuple]) -> list[tuple]:
    for r in rows:
        for v in r:
            if isinstance(v, list | dict):
                raise EvaluatorError(f"unhashable {type(v).__name__} value")
    return rows


def bird(gold: ResultSet, pred: ResultSet, **_: Any) -> bool:
    """BIRD dev: set(predicted) == set(ground truth), positional columns, exact values."""
    return set(_hashable_rows(pred.rows)) == set(_hashable_rows(gold.rows))


def _to_date(v: Any) -> Any:
    return v.date() if isinstance(v, dt.datetime) else v


def critic(gold: ResultSet, pred: ResultSet, **_: Any) -> bool:
    """BIRD-CRITIC PostgreSQL ex_base: sets of rows with datetimes cut to a date; an empty gold fails."""
    if not gold.rows:
        return False
    g = {tuple(_to_date(v) for v in r) for r in _hashable_rows(gold.rows)}
    p = {tuple(_to_date(v) for v in r) for r in _hashable_rows(pred.rows)}
    return g == p


def test_suite(gold: ResultSet, pred: ResultSet, *, gold_sql: str, **_: Any) -> bool:
    """Spider test-suite result_eq: multisets, any column permutation, exact order if the gold says "order by"."""
    g, p = _hashable_rows(gold.rows), _hashable_rows(pred.rows)
    if len(g) != len(p):
        return False
    if not g:
        return True
    if len(g[0]) != len(p[0]):
        return False
    order_matters = "order by" in gold_sql.lower()
    width = len(g[0])
    gcols = [Counter(r[i] for r in g) for i in range(width)]
    choices = [[j for j in range(width) if Counter(r[j] for r in p) == gcols[i]] for i in range(width)]
    for perm in itertools.product(*choices):
        if len(set(perm)) != width:
            continue
        pp = [tuple(r[j] for j in perm) for r in p]
        if (pp == g) if order_matters else (Counter(pp) == Counter(g)):
            return True
    return False


def _defog_frame(
    rows: list[tuple], columns: tuple[str, ...], *, keep_order: bool
) -> tuple[tuple, list[tuple]]:
    order = sorted(range(len(columns)), key=lambda i: columns[i].lower())
    cols = tuple(columns[i].lower() for i in order)
    out = list(dict.fromkeys(tuple(r[i] for i in order) for r in _hashable_rows(rows)))
    if not keep_order:
        out.sort(key=lambda r: tuple(sort_key(normalize_value(v)) for v in r))
    return cols, out


def defog_exact(gold: ResultSet, pred: ResultSet, *, question: str = "", **_: Any) -> bool:
    """defog sql-eval exact match: duplicates dropped, columns by name, rows re-sorted unless the question orders."""
    if gold.rows == pred.rows and gold.columns == pred.columns:
        return True
    keep = "order" in question.lower()
    return _defog_frame(gold.rows, gold.columns, keep_order=keep) == _defog_frame(
        pred.rows, pred.columns, keep_order=keep
    )


def _float_eq(a: Any, b: Any, *, rel: float = 1e-5, abs_: float = 1e-8) -> bool:
    if (
        isinstance(a, float)
        and isinstance(b, float | int)
        and not isinstance(b, bool)
        or (isinstance(b, float) and isinstance(a, int) and not isinstance(a, bool))
    ):
        return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)
    return a == b


def _sorted_column(rows: list[tuple], i: int) -> list:
    return sorted((r[i] for r in rows), key=lambda v: sort_key(normalize_value(v)))


def _subset_df(gold: ResultSet, pred: ResultSet, *, question: str) -> bool:
    """sql-eval's subset_df: each gold column matched to a distinct predicted column with the same values (floats
    within tolerance), then the matched columns compared as a table. Crashes (EvaluatorError) on unhashables."""
    g, p = _hashable_rows(gold.rows), _hashable_rows(pred.rows)
    if not g or not p:
        return not g and not p
    matched: list[int] = []
    for i in range(len(gold.columns)):
        gi = _sorted_column(g, i)
        for j in range(len(pred.columns)):
            if j in matched:
                continue
            pj = _sorted_column(p, j)
            if len(gi) == len(pj) and all(_float_eq(a, b) for a, b in zip(gi, pj, strict=True)):
                matched.append(j)
                break
        else:
            return False
    keep = "order" in question.lower()
    sub = [tuple(r[j] for j in matched) for r in p]
    _, a = _defog_frame(g, gold.columns, keep_order=keep)
    _, b = _defog_frame(sub, gold.columns, keep_order=keep)
    return len(a) == len(b) and all(
        all(_float_eq(x, y) for x, y in zip(ra, rb, strict=True)) for ra, rb in zip(a, b, strict=True)
    )


def defog(gold: ResultSet, pred: ResultSet, *, question: str = "", **_: Any) -> bool:
    """defog sql-eval `correct`: the subset comparison, or else the exact one. As measured (VERDICTS.md), the
    subset comparison runs, and can crash on arrays, even where the exact comparison would pass."""
    subset = _subset_df(gold, pred, question=question)
    return subset or defog_exact(gold, pred, question=question)


def _spider2_eq(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, Decimal):
        return math.isclose(float(a), float(b), abs_tol=0.01)
    return a == b


def spider2(gold: ResultSet, pred: ResultSet, *, gold_sql: str, **_: Any) -> bool:
    """Spider 2.0: each gold column matched to any predicted column on its own (row alignment is lost)."""
    g, p = _hashable_rows(gold.rows), _hashable_rows(pred.rows)
    if not g and not p:
        return True
    ignore_order = "order by" not in gold_sql.lower()

    def vector(rows: list[tuple], i: int) -> list:
        return _sorted_column(rows, i) if ignore_order else [r[i] for r in rows]

    pvecs = [vector(p, j) for j in range(len(pred.columns))]
    for i in range(len(gold.columns)):
        gv = vector(g, i)
        if not any(len(gv) == len(pv) and all(_spider2_eq(a, b) for a, b in zip(gv, pv, strict=True))
                   for pv in pvecs):  # fmt: skip
            return False
    return True


LEGACY: dict[str, Callable[..., bool]] = {
    "bird": bird,
    "critic": critic,
    "test_suite": test_suite,
    "defog": defog,
    "defog_exact": defog_exact,
    "spider2": spider2,
}
