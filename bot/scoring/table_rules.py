"""The rules of a table comparison (VERDICTS.md), in the order compare_tables (tables.py) applies them: RULES.

Each rule is a function of the Comparison (table_state.py) with one job. It decides the verdict by returning a
TableVerdict, or returns None to let the next rule look; on the way it may add a flag or what later rules read
(the normalised rows, the mappings tried). The last rule always decides.

To add a rule:
1. write its function here (`def my_rule(c: Comparison) -> TableVerdict | None`; small, one job);
2. put it in RULES at the point where it must run (the one registry line);
3. add its test family to tests/unit/test_table_rules.py: a gold/prediction pair the rule decides, one it passes.
A rule that needs a new option: declare it on CompareOptions (bot/cases/model.py, what users write) and give it
its default on TableOptions (table_options.py); it is carried over by name.
"""

from __future__ import annotations

from collections import Counter

from bot.scoring.column_mappings import approx_columns, candidate_mappings, project
from bot.scoring.firstdiff import MAX_ROWS, first_difference, row_counts
from bot.scoring.row_matching import dedupe, drop_tie_run, multiset_equal, order_ok
from bot.scoring.table_state import Comparison, Rule, TableVerdict
from bot.scoring.type_notes import by_name, type_notes, with_lead
from bot.scoring.values import FAST_OIDS, normalize_rows

MAX_EXPLAINED_MAPPINGS = 8


def row_cap(c: Comparison) -> TableVerdict | None:
    """A side cut at the row cap: undecidable when both are (or under set semantics), else a row count mismatch."""
    gold, pred = c.gold, c.pred
    if not (gold.truncated or pred.truncated):
        return None
    c.flags.append("truncated")
    if gold.truncated and pred.truncated:
        return c.verdict(None, "undecidable", "both results exceed the row cap: cannot decide")
    who = "gold" if gold.truncated else "prediction"
    if c.opts.rows == "set":
        return c.verdict(
            None,
            "undecidable",
            f"the {who} exceeds the row cap; under set semantics the distinct rows "
            "beyond it could still match: cannot decide",
        )
    return c.verdict(
        False, "mismatch", f"row count differs: the {who} exceeds the row cap, the other does not"
    )


def flag_order_checked(c: Comparison) -> TableVerdict | None:
    if c.order is not None:
        c.flags.append("order_checked")
    return None


def flag_gold_empty(c: Comparison) -> TableVerdict | None:
    if not c.gold.rows:
        c.flags.append("gold_empty")
    return None


def column_count(c: Comparison) -> TableVerdict | None:
    """The widths must agree, but for a wider prediction when columns may be a subset."""
    gold, pred = c.gold, c.pred
    gw, pw = len(gold.columns), len(pred.columns)
    if gw == pw or (c.opts.columns == "subset" and gw < pw):
        return None
    gcols, pcols = ", ".join(gold.columns), ", ".join(pred.columns)
    return c.verdict(
        False,
        "mismatch",
        f"column count differs: gold has {gw} ({gcols}), prediction has {pw} ({pcols})",
        {"gold_columns": list(gold.columns), "pred_columns": list(pred.columns)},
    )


def flag_ambiguous_ties(c: Comparison) -> TableVerdict | None:
    if c.order is not None and c.order.tie_cut:
        c.flags.append("ambiguous_ties")
    return None


def empty_gold_fails(c: Comparison) -> TableVerdict | None:
    if not c.gold.rows and c.opts.empty_gold_fails:
        return c.verdict(False, "mismatch", "the gold is empty (empty_gold_fails)")
    return None


def raw_rows_equal(c: Comparison) -> TableVerdict | None:
    """Same column types, same rows as fetched: Python equality is already the rule (bool vs int cannot meet in
    one column type). None means "look closer" (NaN, json and arrays take the slow path)."""
    gold, pred, opts, order = c.gold, c.pred, c.opts, c.order
    if (
        opts.rows != "multiset"
        or gold.type_oids != pred.type_oids
        or not FAST_OIDS.issuperset(gold.type_oids)
        or opts.bool_is_int
        or opts.datetime_as_date
        or (order is not None and order.tie_cut)
    ):
        return None
    try:
        if gold.rows != pred.rows and Counter(gold.rows) != Counter(pred.rows):
            return None
    except TypeError:
        return None
    if order is not None and gold.rows != pred.rows and not order_ok(gold.rows, pred.rows, order, opts)[0]:
        return None
    return c.verdict(True, "exact", "results match", mapping=tuple(range(len(gold.columns))))


def normalize_values(c: Comparison) -> TableVerdict | None:
    """Both sides' rows as comparable values (values.py), loosened as the options say."""
    bool_is_int, as_date = c.opts.bool_is_int, c.opts.datetime_as_date
    c.g = normalize_rows(c.gold.rows, c.gold.type_oids, bool_is_int=bool_is_int, datetime_as_date=as_date)
    c.p = normalize_rows(c.pred.rows, c.pred.type_oids, bool_is_int=bool_is_int, datetime_as_date=as_date)
    return None


def set_semantics(c: Comparison) -> TableVerdict | None:
    if c.opts.rows == "set":
        c.flags.append("set_semantics")
        c.g = dedupe(c.g)
    return None


def column_mapping(c: Comparison) -> TableVerdict | None:
    """A match under the first candidate column mapping (column_mappings.py) whose rows agree, in order."""
    for mapping in candidate_mappings(c.gold, c.pred, c.g, c.p, c.opts.columns):
        verdict = _verify(c, mapping)
        if verdict is not None:
            return verdict
    return None


def _verify(c: Comparison, mapping: tuple[int, ...]) -> TableVerdict | None:
    """The match under one mapping, or None after noting why the rows (or their order) differ under it."""
    pp = project(c.p, mapping)
    if c.opts.rows == "set":
        pp = dedupe(pp)
    gg, pc, counts_ok = c.g, pp, True
    if c.order is not None and c.order.tie_cut and c.order.key_positions is not None:
        gg, pc, counts_ok = drop_tie_run(c.g, pp, c.order.key_positions)
    equal, tolerant = multiset_equal(gg, pc, approx_columns(c.gold, c.pred, mapping), c.opts)
    if not (equal and counts_ok):
        if len(c.tried) < MAX_EXPLAINED_MAPPINGS:
            c.tried.append(mapping)
        return None
    if c.order is not None:
        ok, why = order_ok(c.g, pp, c.order, c.opts)
        if not ok:
            c.order_fail = why
            return None
    return _matched(c, mapping, tolerant=tolerant)


def _matched(c: Comparison, mapping: tuple[int, ...], *, tolerant: bool) -> TableVerdict:
    gw, pw = len(c.gold.columns), len(c.pred.columns)
    kind = "exact"
    if pw > gw:
        kind = "subset_columns"
    elif mapping != tuple(range(gw)):
        kind = "permuted_columns"
    if tolerant and kind == "exact":
        kind = "within_tolerance"
    elif tolerant:
        c.flags.append("within_tolerance")
    message = "results match" + ("" if kind == "exact" else f" ({kind.replace('_', ' ')})")
    return c.verdict(True, kind, message, mapping=mapping)


def row_order(c: Comparison) -> TableVerdict | None:
    """The rows matched under some mapping but not in the gold's order."""
    if c.order_fail is not None:
        return c.verdict(False, "mismatch", c.order_fail)
    return None


def explained_mismatch(c: Comparison) -> TableVerdict | None:
    """The mismatch, explained by the first difference between aligned rows (firstdiff.py), found only now that
    the verdict is decided, led by the columns whose values differ only by type (type_notes.py). Under set
    semantics both sides are compared as distinct rows."""
    gold, pred, opts, g, p, tried = c.gold, c.pred, c.opts, c.g, c.p, c.tried
    diff = first_difference(
        g,
        p,
        columns=gold.columns,
        pred_columns=pred.columns,
        mappings=tried,
        keys=c.keys() if c.keys else (),
        abs_tol=opts.abs_tol,
        rel_tol=opts.rel_tol,
        distinct=opts.rows == "set",
        positional=opts.columns == "positional",
    )
    mapping = (
        diff.mapping if diff is not None and diff.mapping else (tried[0] if tried else by_name(gold, pred))
    )
    notes = type_notes(gold, pred, g, p, mapping, distinct=opts.rows == "set")
    typed = {"types": [n.details() for n in notes]} if notes else {}
    if not tried and (diff is None or diff.mapping_score == 0):
        names = ", ".join(gold.columns)
        text = f"no column of the prediction lines up with the gold's ({names})"
        return c.verdict(False, "mismatch", with_lead(notes, text), typed or None)
    if diff is not None:
        counts = {"gold_rows": diff.gold_rows, "pred_rows": diff.pred_rows, **typed}
        message = with_lead(notes, diff.message())
        return c.verdict(False, "mismatch", message, {**counts, "first_difference": diff.details()})
    gn, pn = len(g), len(dedupe(project(p, tried[0])) if opts.rows == "set" else p)
    text = row_counts(gn, pn) if gn != pn else "rows differ"
    if max(len(g), len(p)) > MAX_ROWS:
        text += f" (no aligned difference in the first {MAX_ROWS:,} rows of each side)"
    return c.verdict(False, "mismatch", with_lead(notes, text), {"gold_rows": gn, "pred_rows": pn, **typed})


# The registry: the rules in the order they apply. A new rule is one line here.
RULES: tuple[Rule, ...] = (
    row_cap,
    flag_order_checked,
    flag_gold_empty,
    column_count,
    flag_ambiguous_ties,
    empty_gold_fails,
    raw_rows_equal,
    normalize_values,
    set_semantics,
    column_mapping,
    row_order,
    explained_mismatch,
)
