"""Comparing two result sets under sqlcanary's rules (VERDICTS.md): multisets of typed rows, columns matched
by position, by name or by value signature and then verified row by row, order checked on the ORDER BY key only."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.base.results import ResultSet
from bot.scoring.firstdiff import MAX_ROWS, first_difference, row_counts
from bot.scoring.values import (
    APPROX_OIDS,
    DEFAULT_ABS_TOL,
    DEFAULT_REL_TOL,
    FAST_OIDS,
    close,
    normalize_rows,
    show,
    signature_value,
    sort_key,
)

MAX_PERMUTATIONS = 720
MAX_EXPLAINED_MAPPINGS = 8


@dataclass(frozen=True)
class TableOptions:
    rows: Literal["multiset", "set"] = "multiset"
    columns: Literal["positional", "permute", "subset"] = "permute"
    abs_tol: float = DEFAULT_ABS_TOL
    rel_tol: float = DEFAULT_REL_TOL
    bool_is_int: bool = False
    datetime_as_date: bool = False
    empty_gold_fails: bool = False


@dataclass(frozen=True)
class TableVerdict:
    match: bool | None
    kind: str
    message: str
    flags: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    mapping: tuple[int, ...] | None = None  # gold column i is prediction column mapping[i]


@dataclass(frozen=True)
class OrderCheck:
    key_positions: tuple[int, ...] | None  # None: the key is not among the output columns
    tie_cut: bool = False  # the gold's LIMIT cut through a run of equal keys
    # When the key is not an output column: lengths of the gold's runs of equal keys (found by a probe query),
    # so tied rows are still compared as multisets. None and no key positions: compare full sequences.
    runs: tuple[int, ...] | None = None


def _project(rows: list[tuple[Any, ...]], mapping: tuple[int, ...]) -> list[tuple[Any, ...]]:
    if mapping == tuple(range(len(mapping))) and rows and len(rows[0]) == len(mapping):
        return rows
    return [tuple(r[i] for i in mapping) for r in rows]


def _signature(rows: list[tuple[Any, ...]], col: int) -> int:
    return hash(tuple(sorted((signature_value(r[col]) for r in rows), key=sort_key)))


def candidate_mappings(
    gold: ResultSet, pred: ResultSet, g: list, p: list, mode: str
) -> Iterator[tuple[int, ...]]:
    """Column mappings worth verifying, most plausible first: positional, by name, by value signature.

    Lazy: signatures (a sort of every column) are computed only when the cheaper candidates failed."""
    gw, pw = len(gold.columns), len(pred.columns)
    seen: set[tuple[int, ...]] = set()
    if gw == pw:
        seen.add(tuple(range(gw)))
        yield tuple(range(gw))
    if mode == "positional" or (mode == "permute" and gw != pw) or gw > pw:
        return
    gnames = [c.lower() for c in gold.columns]
    pnames = [c.lower() for c in pred.columns]
    if len(set(gnames)) == gw and len(set(pnames)) == pw and set(gnames) <= set(pnames):
        by_name = tuple(pnames.index(n) for n in gnames)
        if by_name not in seen:
            seen.add(by_name)
            yield by_name
    gsig = [_signature(g, i) for i in range(gw)]
    psig = [_signature(p, j) for j in range(pw)]
    choices = [[j for j in range(pw) if psig[j] == gsig[i]] for i in range(gw)]
    if not all(choices):
        return
    for count, combo in enumerate(itertools.product(*choices)):
        if count >= MAX_PERMUTATIONS:
            return
        if len(set(combo)) == gw and combo not in seen:
            seen.add(combo)
            yield tuple(combo)


def _approx_columns(gold: ResultSet, pred: ResultSet, mapping: tuple[int, ...]) -> list[int]:
    return [
        i
        for i, j in enumerate(mapping)
        if gold.type_oids[i] in APPROX_OIDS or pred.type_oids[j] in APPROX_OIDS
    ]


def _multiset_equal(g: list, p: list, approx: list[int], opts: TableOptions) -> tuple[bool, bool]:
    """(equal, needed tolerance)."""
    if len(g) != len(p):
        return False, False
    try:
        if Counter(g) == Counter(p):
            return True, False
    except TypeError:
        pass
    if not approx:
        return False, False
    exact_cols = [i for i in range(len(g[0]) if g else 0) if i not in approx]
    groups: dict[tuple, list[list]] = {}
    for side, rows in ((0, g), (1, p)):
        for r in rows:
            key = tuple(r[i] for i in exact_cols)
            groups.setdefault(key, [[], []])[side].append(tuple(r[i] for i in approx))
    for gv, pv in groups.values():
        if len(gv) != len(pv):
            return False, False
        if not _match_approx(gv, pv, opts):
            return False, False
    return True, True


MAX_GREEDY = 2000


def _match_approx(gv: list[tuple], pv: list[tuple], opts: TableOptions) -> bool:
    """Pair rows of near-equal numbers: in sorted order first; when that fails (several approximate columns can
    sort differently), by a greedy search for a close partner (bounded; larger groups stay with the sorted try)."""

    def near(a: tuple, b: tuple) -> bool:
        return all(close(x, y, abs_tol=opts.abs_tol, rel_tol=opts.rel_tol) for x, y in zip(a, b, strict=True))

    gv.sort(key=lambda t: tuple(sort_key(x) for x in t))
    pv.sort(key=lambda t: tuple(sort_key(x) for x in t))
    if all(near(a, b) for a, b in zip(gv, pv, strict=True)):
        return True
    if len(gv) > MAX_GREEDY or len(gv[0]) < 2:
        return False
    left = list(pv)
    for a in gv:
        hit = next((i for i, b in enumerate(left) if near(a, b)), None)
        if hit is None:
            return False
        left.pop(hit)
    return True


def _dedupe(rows: list) -> list:
    try:
        return list(dict.fromkeys(rows))
    except TypeError:
        return rows


def _order_ok(g: list, p: list, check: OrderCheck, opts: TableOptions) -> tuple[bool, str]:
    if check.key_positions is None and check.runs is not None and sum(check.runs) == len(g) == len(p):
        start = 0
        for length in check.runs:
            approx = list(range(len(g[0]))) if g else []
            if not _multiset_equal(g[start : start + length], p[start : start + length], approx, opts)[0]:
                return False, (
                    f"row order differs: rows {start + 1}-{start + length} of the gold (one run of equal "
                    "ORDER BY keys) hold other rows in the prediction"
                )
            start += length
        return True, ""
    if check.key_positions is None:
        keys_g, keys_p = g, p
    else:
        keys_g = [tuple(r[i] for i in check.key_positions) for r in g]
        keys_p = [tuple(r[i] for i in check.key_positions) for r in p]
    for pos, (a, b) in enumerate(zip(keys_g, keys_p, strict=False)):
        if not close(a, b, abs_tol=opts.abs_tol, rel_tol=opts.rel_tol):
            return (
                False,
                f"row order differs at row {pos + 1}: gold has {show(a)} there, prediction has {show(b)}",
            )
    return True, ""


def _drop_tie_run(g: list, p: list, key_positions: tuple[int, ...]) -> tuple[list, list, bool]:
    """Without the rows of the last key value (cut by LIMIT): the prediction may pick any of the tied rows."""
    if not g:
        return g, p, True
    last = tuple(g[-1][i] for i in key_positions)
    g_keep = [r for r in g if tuple(r[i] for i in key_positions) != last]
    p_keep = [r for r in p if tuple(r[i] for i in key_positions) != last]
    same_count = len(g) - len(g_keep) == len(p) - len(p_keep)
    return g_keep, p_keep, same_count


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
        ok, _ = _order_ok(gold.rows, pred.rows, order, opts)
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
        g = _dedupe(g)
    mappings = candidate_mappings(gold, pred, g, p, opts.columns)
    tried: list[tuple[int, ...]] = []  # mappings under which the rows differ (for the first difference)
    order_fail: str | None = None
    for mapping in mappings:
        pp = _project(p, mapping)
        if opts.rows == "set":
            pp = _dedupe(pp)
        gg, pc, counts_ok = g, pp, True
        if order is not None and order.tie_cut and order.key_positions is not None:
            gg, pc, counts_ok = _drop_tie_run(g, pp, order.key_positions)
        approx = _approx_columns(gold, pred, mapping)
        equal, tolerant = _multiset_equal(gg, pc, approx, opts)
        if not (equal and counts_ok):
            if len(tried) < MAX_EXPLAINED_MAPPINGS:
                tried.append(mapping)
            continue
        if order is not None:
            ok, why = _order_ok(g, pp, order, opts)
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
    gn, pn = len(g), len(_dedupe(_project(p, tried[0])) if opts.rows == "set" else p)
    counts = {"gold_rows": gn, "pred_rows": pn}
    text = row_counts(gn, pn) if gn != pn else "rows differ"
    if max(len(g), len(p)) > MAX_ROWS:
        text += f" (no aligned difference in the first {MAX_ROWS:,} rows of each side)"
    return text, counts
