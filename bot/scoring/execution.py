"""The `execution` scorer: does the prediction return the gold's result? (one gold alternative at a time)."""

from __future__ import annotations

from bot.base.results import ResultSet, Verdict
from bot.cases.model import CompareOptions
from bot.scoring.order import OrderInfo, order_info
from bot.scoring.presets import LEGACY, PRESETS, EvaluatorError
from bot.scoring.rowkeys import alignment_keys
from bot.scoring.tables import OrderCheck, TableOptions, compare_tables
from bot.scoring.values import DEFAULT_ABS_TOL, DEFAULT_REL_TOL

DEFAULTS = CompareOptions(
    preset="sqlcanary",
    rows="multiset",
    columns="permute",
    order="auto",
    abs_tol=DEFAULT_ABS_TOL,
    rel_tol=DEFAULT_REL_TOL,
)


def resolve_options(*layers: CompareOptions | None) -> CompareOptions:
    """Later layers win: suite defaults, then the case, then a command-line preset."""
    out = DEFAULTS
    for layer in layers:
        if layer is not None:
            out = layer.merged_over(out)
    if out.preset not in PRESETS:
        raise ValueError(f"unknown preset {out.preset!r} (known: {', '.join(PRESETS)})")
    return out


def wants_order(gold_sql: str, options: CompareOptions) -> OrderInfo | None:
    """The gold's ORDER BY, when the options say order is checked (auto: only when the gold orders)."""
    if options.preset != "sqlcanary" or options.order == "ignore":
        return None
    info = order_info(gold_sql)
    if options.order == "strict" and not info.ordered:
        return OrderInfo(ordered=True, limit=info.limit)
    return info if info.ordered else None


def judge_results(
    gold: ResultSet,
    pred: ResultSet,
    *,
    options: CompareOptions,
    gold_sql: str,
    question: str = "",
    pred_sql: str = "",
    order: OrderCheck | None = None,
    alternative: int = 0,
) -> Verdict:
    """The execution verdict for one gold alternative. `pred_sql` is the prediction's text: defog's comparison
    reads its ORDER BY (and the gold's) to decide how to sort rows."""
    preset = options.preset or "sqlcanary"
    if preset != "sqlcanary":
        try:
            ok = LEGACY[preset](gold, pred, gold_sql=gold_sql, question=question, pred_sql=pred_sql)
        except EvaluatorError as exc:
            return Verdict(
                scorer="execution",
                match=False,
                kind="evaluator_error",
                message=f"the {preset} evaluator would crash on these results: {exc}",
                details={"preset": preset, "alternative": alternative},
            )
        return Verdict(
            scorer="execution",
            match=ok,
            kind="exact" if ok else "mismatch",
            message=f"{preset} evaluator: {'match' if ok else 'no match'}",
            details={"preset": preset, "alternative": alternative},
        )
    tv = compare_tables(
        gold,
        pred,
        opts=TableOptions.from_compare(options),
        order=order,
        keys=lambda: alignment_keys(gold_sql, gold.columns),
    )
    details = dict(tv.details)
    details["alternative"] = alternative
    if tv.mapping is not None and tv.kind != "exact":
        details["column_mapping"] = list(tv.mapping)
    return Verdict(
        scorer="execution", match=tv.match, kind=tv.kind, flags=tv.flags, message=tv.message, details=details
    )


def error_verdict(scorer: str, *, error: str, error_class: str | None, who: str = "prediction") -> Verdict:
    kind = "pred_error" if who == "prediction" else "gold_error"
    return Verdict(
        scorer=scorer,
        match=False if who == "prediction" else None,
        kind=kind,
        message=f"the {who} failed: {error}",
        details={"error_class": error_class},
    )
