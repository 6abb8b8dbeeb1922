"""The evaluation metrics as the workflow's outputs (action.yml): each metric's median per case, base and head
(`cost-per-case-base`, `cost-per-case-head`, ...), empty when the runs did not measure it."""

from __future__ import annotations

from bot.base.results import RunResult
from bot.compare.comparison import Comparison
from bot.compare.metrics import METRICS, VALUE, Metric, median

NAMES: dict[Metric, str] = {
    "cost": "cost-per-case",
    "tokens": "tokens-per-case",
    "latency": "latency-p50",
    "query_cost": "query-cost-per-case",
}
OUTPUT_NAMES = tuple(f"{NAMES[m]}-{side}" for m in METRICS for side in ("base", "head"))


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def metric_outputs(comparison: Comparison) -> dict[str, str]:
    """Each metric's medians over the cases both runs measured (bot.compare.metrics)."""
    out = dict.fromkeys(OUTPUT_NAMES, "")
    for d in comparison.metrics:
        out[f"{NAMES[d.metric]}-base"] = _number(d.base_median)
        out[f"{NAMES[d.metric]}-head"] = _number(d.head_median)
    return out


def run_metric_outputs(run: RunResult) -> dict[str, str]:
    """A run alone: each metric's median over the cases it measured, as the head's."""
    out = dict.fromkeys(OUTPUT_NAMES, "")
    for m in METRICS:
        values = [v for c in run.cases if (v := VALUE[m](c)) is not None]
        out[f"{NAMES[m]}-head"] = _number(median(values)) if values else ""
    return out
