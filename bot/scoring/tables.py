"""Comparing two result sets under sqlcanary's rules (VERDICTS.md): multisets of typed rows, columns matched
by position, by name or by value signature and then verified row by row, order checked on the ORDER BY key only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.base.results import ResultSet
from bot.scoring.column_mappings import approx_columns, candidate_mappings, project
from bot.scoring.firstdiff import MAX_ROWS, first_difference, row_counts
from bot.scoring.row_matching import (
    OrderCheck,
    TableOptions,
    dedupe,
    drop_tie_run,
    multiset_equal,
    order_ok,
)
from bot.scoring.values import FAST_OIDS, normalize_rows

__all__ = ["OrderCheck", "TableOptions", "TableVerdict", "compare_tables"]  # the options are compare_tables's

MAX_EXPLAINED_MAPPINGS = 8


@dataclass(frozen=True)
class TableVerdict:
    match: bool | None
    kind: str
    message: str
    flags: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    mapping: tuple[int, ...] | None = None  # gold column i is prediction column mapping[i]


def _raw_fast_path(
    gold: ResultSet, pred: ResultSet, *, order: OrderCheck | None, opts: TableOptions, flags: list[str]
) -> TableVerdict | None:
    """Same column types, same rows as fetched: Python equality is already the rule (bool vs int cannot meet
    in one column type). None means "look closer" (NaN, json and arrays take the slow path)."""
    try:
        if gold.rows != pred.rows and Counter(gold.rows) != Counter(pred.rows):
            return None
    except TypeError:
        return None
    if order is not None and gold.rows != pred.rows:
        ok, _ = order_ok(gold.rows, pred.rows, order, opts)
        if not ok:
            return None
    return TableVerdict(True, "exact", "results match", tuple(flags), {}, tuple(range(len(gold.columns))))


def compare_tables(
    gold: ResultSet,
    pred: ResultSet,
    *,
    opts: TableOptions,
    order: OrderCheck | None = None,
    keys: Callable[[], Sequence[tuple[int, ...]]] | None = None,
) -> TableVerdict:
    """`keys` gives candidate row keys from the gold's SQL (gold column positions); called only to explain a
    mismatch, so a passing case never pays for it."""
    flags: list[str] = []
    if gold.truncated or pred.truncated:
        flags.append("truncated")
        if gold.truncated and pred.truncated:
            return TableVerdict(
                None, "undecidable", "both results exceed the row cap: cannot decide", tuple(flags)
            )
        if opts.rows == "set":
            who = "gold" if gold.truncated else "prediction"
            return TableVerdict(
                None,
                "undecidable",
                f"the {who} exceeds the row cap; under set semantics the distinct rows "
                "beyond it could still match: cannot decide",
                tuple(flags),
            )
        who = "gold" if gold.truncated else "prediction"
        return TableVerdict(
            False,
            "mismatch",
            f"row count differs: the {who} exceeds the row cap, the other does not",
            tuple(flags),
        )
    if order is not None:
        flags.append("order_checked")
    if not gold.rows:
        flags.append("gold_empty")
    gw, pw = len(gold.columns), len(pred.columns)
    if gw != pw and not (opts.columns == "subset" and gw < pw):
        gcols, pcols = ", ".join(gold.columns), ", ".join(pred.columns)
        return TableVerdict(
            False,
            "mismatch",
            f"column count differs: gold has {gw} ({gcols}), prediction has {pw} ({pcols})",
            tuple(flags),
            {"gold_columns": list(gold.columns), "pred_columns": list(pred.columns)},
        )
    if order is not None and order.tie_cut:
        flags.append("ambiguous_ties")
    if not gold.rows and opts.empty_gold_fails:
        return TableVerdict(False, "mismatch", "the gold is empty (empty_gold_fails)", tuple(flags))
    loosened = opts.bool_is_int or opts.datetime_as_date
    if (
        opts.rows == "multiset"
        and gold.type_oids == pred.type_oids
        and FAST_OIDS.issuperset(gold.type_oids)
        and not loosened
        and (order is None or not order.tie_cut)
    ):
        fast = _raw_fast_path(gold, pred, order=order, opts=opts, flags=flags)
        if fast is not None:
            return fast
    g = normalize_rows(
        gold.rows, gold.type_oids, bool_is_int=opts.bool_is_int, datetime_as_date=opts.datetime_as_date
    )
    p = normalize_rows(
        pred.rows, pred.type_oids, bool_is_int=opts.bool_is_int, datetime_as_date=opts.datetime_as_date
    )
    if opts.rows == "set":
        flags.append("set_semantics")
        g = dedupe(g)
    mappings = candidate_mappings(gold, pred, g, p, opts.columns)
    tried: list[tuple[int, ...]] = []  # mappings under which the rows differ (for the first difference)
    order_fail: str | None = None
    for mapping in mappings:
        pp = project(p, mapping)
        if opts.rows == "set":
            pp = dedupe(pp)
        gg, pc, counts_ok = g, pp, True
        if order is not None and order.tie_cut and order.key_positions is not None:
            gg, pc, counts_ok = drop_tie_run(g, pp, order.key_positions)
        approx = approx_columns(gold, pred, mapping)
        equal, tolerant = multiset_equal(gg, pc, approx, opts)
        if not (equal and counts_ok):
            if len(tried) < MAX_EXPLAINED_MAPPINGS:
                tried.append(mapping)
            continue
        if order is not None:
            ok, why = order_ok(g, pp, order, opts)
            if not ok:
                order_fail = why
                continue
        kind = "exact"
        if pw > gw:
            kind = "subset_columns"
        elif mapping != tuple(range(gw)):
            kind = "permuted_columns"
        if tolerant and kind == "exact":
            kind = "within_tolerance"
        elif tolerant:
            flags.append("within_tolerance")
        message = "results match" + ("" if kind == "exact" else f" ({kind.replace('_', ' ')})")
        return TableVerdict(True, kind, message, tuple(flags), {}, mapping)
    if order_fail is not None:
        return TableVerdict(False, "mismatch", order_fail, tuple(flags), {})
    message, details = _explain(gold, pred, g, p, tried=tried, opts=opts, keys=keys)
    return TableVerdict(False, "mismatch", message, tuple(flags), details)


def _explain(
    gold: ResultSet,
    pred: ResultSet,
    g: list,
    p: list,
    *,
    tried: list[tuple[int, ...]],
    opts: TableOptions,
    keys: Callable[[], Sequence[tuple[int, ...]]] | None,
) -> tuple[str, dict[str, Any]]:
    """The message of a failed comparison: the first difference between aligned rows (firstdiff.py), found only
    now that the verdict is decided. Under set semantics both sides are compared as distinct rows."""
    diff = first_difference(
        g,
        p,
        columns=gold.columns,
        pred_columns=pred.columns,
        mappings=tried,
        keys=keys() if keys else (),
        abs_tol=opts.abs_tol,
        rel_tol=opts.rel_tol,
        distinct=opts.rows == "set",
        positional=opts.columns == "positional",
    )
    if not tried and (diff is None or diff.mapping_score == 0):
        names = ", ".join(gold.columns)
        return f"no column of the prediction lines up with the gold's ({names})", {}
    if diff is not None:
        counts = {"gold_rows": diff.gold_rows, "pred_rows": diff.pred_rows}
        return diff.message(), {**counts, "first_difference": diff.details()}
    gn, pn = len(g), len(dedupe(project(p, tried[0])) if opts.rows == "set" else p)
    counts = {"gold_rows": gn, "pred_rows": pn}
    text = row_counts(gn, pn) if gn != pn else "rows differ"
    if max(len(g), len(p)) > MAX_ROWS:
        text += f" (no aligned difference in the first {MAX_ROWS:,} rows of each side)"
    return text, counts
