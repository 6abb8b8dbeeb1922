"""Comparison functions that reproduce the official evaluators on the same result pairs (VERDICTS.md table).

They are here so that a side-by-side check is a unit test, and so a team can score a suite the way a public
leaderboard would. They keep those evaluators' known flaws on purpose; the default preset is `sqlcanary`.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bot.base.results import ResultSet
from bot.config.presets import PRESET_NAMES
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


# sql-eval's normalize_table: the question asks for order when it has one of these words (whole words only, so
# neither "border" nor "sorted" counts); its query_category "order_by" is not known here.
_DEFOG_ORDER_WORDS = re.compile(r"\b(order|sort|arrange)\b", re.IGNORECASE)
_DEFOG_CLAUSE = re.compile(r"ORDER BY[\s\S]*", re.IGNORECASE)
_DEFOG_KEYS = re.compile(r"(?<=ORDER BY)(.*?)(?=;|,|\)|$)", re.IGNORECASE)
_DEFOG_NOT_KEYS = {"desc", "asc", "nulls", "last", "first", "limit"}
_DEFOG_FILL = -99999  # compare_df's fillna value: NULL and NaN equal it (and each other)


class _Na:
    """pandas' missing value (NULL or NaN): one value for drop_duplicates, sorted last in either direction."""

    def __repr__(self) -> str:
        return "NA"


_NA = _Na()


def defog_orders(question: str) -> bool:
    """Whether sql-eval takes the question as asking for an order (then it stops re-sorting rows)."""
    return _DEFOG_ORDER_WORDS.search(question.lower()) is not None


def _defog_sort_keys(sql: str) -> tuple[list[str], bool] | None:
    """The column names and direction sql-eval reads, by regex, from the first ORDER BY of the query's text up
    to the first `;`, `,` or `)`; descending unless only ASC is written. None when the text has no ORDER BY."""
    clause = _DEFOG_CLAUSE.search(sql)
    if clause is None:
        return None
    found = _DEFOG_KEYS.findall(clause.group(0))
    tokens = [t.strip().rsplit(".", 1)[-1] for t in (found[0].split() if found else [])]
    upper = [t.upper() for t in tokens]
    ascending = "DESC" not in upper and "ASC" in upper
    names = [t.strip().replace(",", "").replace("(", "") for t in tokens]
    return [n for n in names if n.lower() not in _DEFOG_NOT_KEYS], ascending


def _stable_sort(rows: list[tuple], cols: list[int], *, ascending: bool) -> list[tuple]:
    """pandas sort_values(by=cols, ascending=...) with missing values last: one stable pass per column."""
    for c in reversed(cols):
        present = [r for r in rows if r[c] is not _NA]
        present.sort(key=lambda r: sort_key(normalize_value(r[c])), reverse=not ascending)
        rows = present + [r for r in rows if r[c] is _NA]
    return rows


def _defog_frame(
    rows: list[tuple], columns: tuple[str, ...], *, ordered: bool, sql: str | None = None
) -> list[tuple]:
    """sql-eval's normalize_table: duplicates dropped, columns in alphabetical order of their names, rows sorted
    by every column, or, when the question asks for order, by the columns its ORDER BY names (kept as returned
    when `sql` is absent or has no ORDER BY). Only the values come out: compare_df never compares names."""
    na = [
        tuple(_NA if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in r)
        for r in _hashable_rows(rows)
    ]
    if len(set(columns)) != len(columns):
        raise EvaluatorError("pandas cannot reindex columns with duplicate names")
    names = sorted(columns)
    out = list(dict.fromkeys(tuple(r[columns.index(n)] for n in names) for r in na))
    if not ordered:
        return _stable_sort(out, list(range(len(names))), ascending=True)
    keys = _defog_sort_keys(sql) if sql else None
    if keys is None:
        return out
    by = [n for n in keys[0] if n in names]
    others = [n for n in names if n not in by]
    out = _stable_sort(out, [names.index(n) for n in by + others], ascending=keys[1])
    return [tuple(r[names.index(n)] for n in others + by) for r in out]


def _broadcast_equal(g: list[tuple], gw: int, p: list[tuple], pw: int) -> bool:
    """compare_df's first test, `(df_gold.values == df_gen.values).all()`, with numpy's broadcasting: a side
    with one row (or one column) is compared with every row (column) of the other, and an empty side is equal."""
    shape = []
    for a, b in ((len(g), len(p)), (gw, pw)):
        if a != b and 1 not in (a, b):
            return False
        shape.append(min(a, b) if 0 in (a, b) else max(a, b))
    return all(
        g[i if len(g) > 1 else 0][j if gw > 1 else 0] == p[i if len(p) > 1 else 0][j if pw > 1 else 0]
        for i in range(shape[0])
        for j in range(shape[1])
    )


def defog_exact(
    gold: ResultSet, pred: ResultSet, *, question: str = "", gold_sql: str = "", pred_sql: str = "", **_: Any
) -> bool:
    """defog sql-eval compare_df: the raw values equal, or else the normalised tables' values equal (names are
    only used to put the columns in alphabetical order)."""
    if _broadcast_equal(gold.rows, len(gold.columns), pred.rows, len(pred.columns)):
        return True
    ordered = defog_orders(question)
    g = _defog_frame(gold.rows, gold.columns, ordered=ordered, sql=gold_sql)
    p = _defog_frame(pred.rows, pred.columns, ordered=ordered, sql=pred_sql)

    def fill(r: tuple) -> tuple:
        return tuple(_DEFOG_FILL if v is _NA else v for v in r)

    return (
        len(g) == len(p)
        and len(gold.columns) == len(pred.columns)
        and all(fill(a) == fill(b) for a, b in zip(g, p, strict=True))
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


def _unique_names(columns: tuple[str, ...]) -> tuple[str, ...]:
    """sql-eval's deduplicate_columns, which subset_df applies first: each repeated name `n` at position i
    becomes `n_i`."""
    return tuple(f"{c}_{i}" if columns.count(c) > 1 else c for i, c in enumerate(columns))


def _subset_df(gold: ResultSet, pred: ResultSet, *, question: str) -> bool:
    """sql-eval's subset_df: each gold column matched to a distinct predicted column with the same values (floats
    within tolerance), then the matched columns compared as a table (no SQL given: in order when the question
    asks for order). An empty gold is never a subset. Crashes (EvaluatorError) on unhashables."""
    g, p = _hashable_rows(gold.rows), _hashable_rows(pred.rows)
    if not g:
        return False
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
    if any(pred.columns.count(pred.columns[j]) > 1 for j in matched):
        raise EvaluatorError(
            "subset_df looks up a renamed duplicate column of the prediction that is not there"
        )
    ordered = defog_orders(question)
    sub = [tuple(r[j] for j in matched) for r in p]
    names = _unique_names(gold.columns)
    a = _defog_frame(g, names, ordered=ordered)
    b = _defog_frame(sub, names, ordered=ordered)
    return len(a) == len(b) and all(
        all(_float_eq(x, y) for x, y in zip(ra, rb, strict=True)) for ra, rb in zip(a, b, strict=True)
    )


def defog(
    gold: ResultSet, pred: ResultSet, *, question: str = "", gold_sql: str = "", pred_sql: str = "", **_: Any
) -> bool:
    """defog sql-eval `correct`: the subset comparison, or else the exact one. As measured (VERDICTS.md), the
    subset comparison runs, and can crash on arrays, even where the exact comparison would pass."""
    subset = _subset_df(gold, pred, question=question)
    return subset or defog_exact(gold, pred, question=question, gold_sql=gold_sql, pred_sql=pred_sql)


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
        if not any(
            len(gv) == len(pv) and all(_spider2_eq(a, b) for a, b in zip(gv, pv, strict=True)) for pv in pvecs
        ):
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
