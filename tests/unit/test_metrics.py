"""Evaluation metrics base against head (bot.compare.metrics) and their gates (bot.compare.gate): paired by case,
medians and an exact interval for the median change, latency only from answers asked in the run, and a gate that
fails only on a rise beyond its limit whose interval lies wholly above zero."""

from __future__ import annotations

from math import comb

import pytest
from pydantic import ValidationError

from bot.base.results import CaseResult, Prediction, RunMeta, RunResult, Summary, summarize
from bot.base.usage import AnswerUsage, QueryCost
from bot.compare.gate import metric_reasons
from bot.compare.metrics import compare_metrics, median_interval, metric_delta
from bot.config.gate_settings import GateSettings


def _coverage(n: int, k: int) -> float:
    return 1 - 2 * sum(comb(n, i) for i in range(k)) / 2**n


@pytest.mark.parametrize("n", [6, 7, 10, 25, 84, 419])
def test_the_interval_of_the_median_covers_at_least_95_percent_and_is_the_narrowest_that_does(n: int) -> None:
    diffs = list(range(n))
    low, high = median_interval([float(d) for d in diffs]) or (None, None)
    k = int(low) + 1  # the k-th smallest difference
    assert high == n - k and _coverage(n, k) >= 0.95 and _coverage(n, k + 1) < 0.95


def test_too_few_pairs_give_no_interval_and_no_gate() -> None:
    assert median_interval([1.0] * 5) is None
    base, head = _run([0.01] * 5), _run([0.05] * 5)
    d = metric_delta("cost", base, head)
    assert d is not None and d.change == pytest.approx(4.0) and not d.gated and "needs 6 cases" in d.note
    assert metric_reasons([d], GateSettings(max_cost_increase="20%")) == []


def _case(i: int, cost: float | None = None, latency: float | None = None, cached: bool = False, qc=None):
    usage = AnswerUsage(cost_usd=cost, prompt_tokens=100, completion_tokens=10) if cost is not None else None
    return CaseResult(
        id=f"c{i}",
        status="passed",
        category="query",
        prediction=Prediction(usage=usage, duration_s=latency, cached=cached),
        query_cost=QueryCost(prediction=qc, gold=1.0) if qc is not None else None,
    )


def _run(costs, latencies=None, cached=False, qc=None) -> RunResult:
    latencies = latencies or [None] * len(costs)
    qc = qc or [None] * len(costs)
    cases = tuple(
        _case(i, c, t, cached, q) for i, (c, t, q) in enumerate(zip(costs, latencies, qc, strict=True))
    )
    return RunResult(meta=RunMeta(suite="s", suite_hash="h"), summary=Summary(), cases=cases)


def test_a_doubled_cost_on_every_case_fails_a_20_percent_gate_naming_the_cases_that_moved_most() -> None:
    base = _run([0.001 * (i + 1) for i in range(10)])
    head = _run([0.002 * (i + 1) for i in range(10)])
    d = metric_delta("cost", base, head)
    assert d is not None and d.pairs == 10 and d.change == pytest.approx(1.0) and d.increased
    assert [m.id for m in d.moved[:2]] == ["c9", "c8"]  # the largest rises first
    [reason] = metric_reasons([d], GateSettings(max_cost_increase="20%"))
    assert "median cost per case rose 100%" in reason and "c9 ($0.0100 → $0.0200)" in reason
    assert metric_reasons([d], GateSettings(max_cost_increase="150%")) == []  # within the limit
    assert metric_reasons([d], GateSettings()) == []  # not configured


def test_a_rise_whose_interval_reaches_zero_never_fails() -> None:
    base = _run([0.01] * 10)
    head = _run(
        [0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.01, 0.01, 0.01, 0.01]
    )  # the median rose; 4 cases did not
    d = metric_delta("cost", base, head)
    assert d is not None and d.change == pytest.approx(1.0) and not d.increased
    assert metric_reasons([d], GateSettings(max_cost_increase="20%")) == []


def test_latency_pairs_only_answers_asked_in_both_runs_and_is_gated_only_when_timed_together() -> None:
    base = _run([0.01] * 8, latencies=[1.0] * 8)
    head = _run([0.01] * 8, latencies=[2.0] * 8)
    d = metric_delta("latency", base, head, latency_gated=True)
    assert d is not None and d.gated and d.change == pytest.approx(1.0)
    assert metric_reasons([d], GateSettings(max_latency_increase="20%"))
    apart = metric_delta("latency", base, head, latency_gated=False)
    assert apart is not None and not apart.gated and "same job" in apart.note
    assert metric_reasons([apart], GateSettings(max_latency_increase="20%")) == []
    cached = _run([0.01] * 8, latencies=[0.001] * 8, cached=True)
    assert metric_delta("latency", cached, head) is None  # a cached answer's time is not this run's
    noise = metric_delta(
        "latency", _run([0.01] * 8, latencies=[0.010] * 8), _run([0.01] * 8, latencies=[0.03] * 8)
    )
    assert noise is not None and not noise.gated and "ms" in noise.note  # +200%, but 20 ms: timer noise


def test_query_cost_is_compared_on_the_prediction_s_plan() -> None:
    base = _run([0.01] * 8, qc=[10.0] * 8)
    head = _run([0.01] * 8, qc=[10.0] * 6 + [400.0, 500.0])
    d = metric_delta("query_cost", base, head)
    assert d is not None and d.change == 0 and [m.id for m in d.moved] == ["c7", "c6"]
    assert {m.metric for m in compare_metrics(base, head, latency_gated=False)} == {
        "cost",
        "tokens",
        "query_cost",
    }


@pytest.mark.parametrize(
    ("given", "read"), [("20%", 0.2), ("150%", 1.5), (0.2, 0.2), ("2.5", 2.5), (None, None)]
)
def test_an_increase_is_a_percentage_or_a_fraction(given, read) -> None:
    assert GateSettings(max_cost_increase=given).max_cost_increase == read


@pytest.mark.parametrize("given", ["-5%", "a lot", True, "20 %%"])
def test_an_increase_that_is_not_one_is_refused(given) -> None:
    with pytest.raises(ValidationError):
        GateSettings(max_tokens_increase=given)


def _shard(run: RunResult, index: int, count: int) -> RunResult:
    cases = run.cases[index - 1 :: count]
    meta = run.meta.model_copy(update={"shard": f"{index}/{count}"})
    return RunResult(meta=meta, summary=summarize(cases), cases=cases)


def test_shards_merge_the_usage_exactly() -> None:
    from bot.run.merge import merge_runs

    whole = _run([0.001 * (i + 1) for i in range(9)])
    whole = RunResult(meta=whole.meta, summary=summarize(whole.cases), cases=whole.cases)
    merged = merge_runs([(f"s{i}.json", _shard(whole, i, 3)) for i in (1, 2, 3)])
    assert merged.summary.usage == whole.summary.usage
    assert merged.summary.usage is not None and merged.summary.usage.cost_usd == pytest.approx(0.045)
    assert merged.summary.usage.answers == 9 and merged.summary.usage.tokens == 9 * 110


def test_the_sweep_report_and_the_check_compare_the_same_runs_the_same_way() -> None:
    from bot.base.results import RunSetting
    from bot.compare.comparison import compare_runs
    from bot.sweep.collect import SettingRun
    from bot.sweep.report import build_report

    first = _run([0.001 * (i + 1) for i in range(8)], latencies=[1.0] * 8, qc=[5.0] * 8)
    second = _run([0.003 * (i + 1) for i in range(8)], latencies=[1.5] * 8, qc=[5.0] * 7 + [90.0])
    items = [
        SettingRun(
            RunSetting(name=name, index=i),
            run.model_copy(update={"summary": summarize(run.cases)}),
            (f"{name}.json",),
        )
        for i, (name, run) in enumerate((("a", first), ("b", second)), start=1)
    ]
    report = build_report(items)
    versus = report.settings[1].versus_first
    assert versus is not None
    assert versus.metrics == compare_runs(first, second).metrics  # a check of the two runs, latency not gated
    assert report.settings[1].cost_usd == pytest.approx(0.108)  # a command agent's reported usage, summed
    from bot.sweep.render import render_markdown

    text = render_markdown(report)
    assert "### Cost, tokens, latency and query cost against `a`" in text
    assert "- `b`: cost/case $0.0045 → $0.0135 (+200%, 95% CI +$0.0020 to +$0.0160)" in text
    assert "latency p50 1.00 s → 1.50 s (+50%, 95% CI +500 ms to +500 ms), not gated" in text


def test_a_few_answers_through_a_plan_ten_times_costlier_are_named_and_gated_when_asked() -> None:
    from bot.compare.comparison import compare_runs

    base = _run([0.01] * 8, qc=[10.0] * 8)
    head = _run([0.01] * 8, qc=[10.0] * 6 + [150.0, 100.0])  # the same rows; two plans 10x-15x the base's
    plain = compare_runs(base, head)
    assert plain.verdict == "pass"  # the median did not move: nothing configured fails
    query = next(d for d in plain.metrics if d.metric == "query_cost")
    assert [m.id for m in query.moved] == ["c6", "c7"]  # named all the same
    gated = compare_runs(base, head, gate=GateSettings(max_query_cost_ratio=10))
    [reason] = gated.reasons
    assert gated.verdict == "regressions" and "2 case(s)" in reason and "c6 (10.0 → 150.0, 15x)" in reason
    assert compare_runs(base, head, gate=GateSettings(max_query_cost_ratio=20)).verdict == "pass"
