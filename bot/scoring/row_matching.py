"""When two lists of normalised rows are equal under a table comparison's rules (TableOptions): as multisets,
with a tolerance on approximate numeric columns, and in the gold's order on its ORDER BY key (OrderCheck)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from bot.scoring.table_options import TableOptions
from bot.scoring.values import close, show, sort_key


@dataclass(frozen=True)
class OrderCheck:
    key_positions: tuple[int, ...] | None  # None: the key is not among the output columns
    tie_cut: bool = False  # the gold's LIMIT cut through a run of equal keys
    # When the key is not an output column: lengths of the gold's runs of equal keys (found by a probe query),
    # so tied rows are still compared as multisets. None and no key positions: compare full sequences.
    runs: tuple[int, ...] | None = None


def multiset_equal(g: list, p: list, approx: list[int], opts: TableOptions) -> tuple[bool, bool]:
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


def dedupe(rows: list) -> list:
    try:
        return list(dict.fromkeys(rows))
    except TypeError:
        return rows


def order_ok(g: list, p: list, check: OrderCheck, opts: TableOptions) -> tuple[bool, str]:
    if check.key_positions is None and check.runs is not None and sum(check.runs) == len(g) == len(p):
        start = 0
        for length in check.runs:
            approx = list(range(len(g[0]))) if g else []
            if not multiset_equal(g[start : start + length], p[start : start + length], approx, opts)[0]:
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


def drop_tie_run(g: list, p: list, key_positions: tuple[int, ...]) -> tuple[list, list, bool]:
    """Without the rows of the last key value (cut by LIMIT): the prediction may pick any of the tied rows."""
    if not g:
        return g, p, True
    last = tuple(g[-1][i] for i in key_positions)
    g_keep = [r for r in g if tuple(r[i] for i in key_positions) != last]
    p_keep = [r for r in p if tuple(r[i] for i in key_positions) != last]
    same_count = len(g) - len(g_keep) == len(p) - len(p_keep)
    return g_keep, p_keep, same_count
