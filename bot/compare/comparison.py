"""compare_runs(base, head, ...) -> Comparison: which cases a change broke or fixed, and how sure we are. Pure.

The models below, with CaseChange, are the contract the reports, the check command and the GitHub adapter
read. CaseChange and the per-case classification and pairing live in bot.compare.transitions; this module re-exports
them.

- Runs that cannot be judged against each other (another suite, a changed fixture of a database both use,
  another case selection or shard, preset or evaluator version) are `incomparable`: see bot.compare.comparable for
  what counts and why. A database only one run uses is fine: a pull request may add one.
- Cases pair by id. A case only in base whose content hash (CaseResult.case_hash: question, database, gold
  SQL, category) matches exactly one case only in head, and no other, is a rename: one `renamed` change,
  judged by the pair's own base -> head outcome (`outcome`), so a renamed case that broke is a regression.
  Runs written before case_hash existed get no rename detection.
- The gate fails on regressions (passed -> failed or errored) beyond `max_regressions`, on removed cases
  unless `allow_removed` (deleting a broken case must not make it pass), on cases that passed and became
  invalid unless `allow_invalid`, and on the pass-rate rules.
- compare_head_only(head) is the first pull request that adds sqlcanary: the base commit has nothing to run,
  so every case is new and only `min_pass_rate` can fail it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from pydantic import Field

from bot.base.results import CaseResult, Counts, FrozenModel, RunMeta, RunResult, summarize
from bot.compare.comparable import (
    describe_selection,
    incomparable_reasons,
    run_warnings,
    selection,
    unanswered_reasons,
)
from bot.compare.deltas import RateDelta
from bot.compare.diff import Cause
from bot.compare.gate import gate_reasons, metric_reasons, pass_rate_floor
from bot.compare.metrics import MetricDelta, compare_metrics, plan_cost_reasons
from bot.compare.transitions import (
    TRANSITIONS,
    CaseChange,
    Transition,
    classify_case,
    edited_warning,
    find_renames,
    new_cases,
    pair_cases,
)
from bot.config.gate_settings import GateSettings

# Callers import the per-case names (bot.compare.transitions) and the gate's from here too.
__all__ = [
    "COMPARISON_SCHEMA_VERSION",
    "NO_BASELINE",
    "TRANSITIONS",
    "Baseline",
    "CaseChange",
    "Comparison",
    "GateSettings",
    "RateDelta",
    "Transition",
    "Verdict",
    "classify_case",
    "compare_head_only",
    "compare_runs",
    "edited_warning",
    "find_renames",
    "gate_reasons",
    "pair_cases",
    "rate_delta",
]

# 2: `renamed` transition (CaseChange.renamed_from / outcome); head-only comparisons (baseline "none", base
# None, baseline_reason). 3: cause linking (Comparison.causes / unexplained / linked / changed_files;
# CaseChange.gold_sql / head_used / base_used). 4: CaseChange.edited. 5: CaseChange.against_base and
# GateSettings.allow_edited (an edited case judged by the base's version too). 6: metrics (cost, tokens, latency,
# query cost) and their gates. Older files still read: every new field has a default.
COMPARISON_SCHEMA_VERSION = 6

Verdict = Literal["pass", "regressions", "incomparable"]
Baseline = Literal["run", "none"]
NO_BASELINE = "the base commit has no sqlcanary suite or config, so there is no base run to compare with"


class Comparison(FrozenModel):
    schema_version: int = COMPARISON_SCHEMA_VERSION
    verdict: Verdict
    reasons: tuple[str, ...] = ()  # why the gate failed, or why the runs are incomparable
    gate: GateSettings = GateSettings()
    # "none": head only (compare_head_only), the base commit had nothing to run; `base` is then None.
    baseline: Baseline = "run"
    baseline_reason: str = ""  # head only: why there is no baseline, in words for the report
    base: RunMeta | None
    head: RunMeta
    forced: bool = False  # compared despite differing fingerprints (--force)
    # Things a reader should know that do not decide the verdict: with --force, the incomparability reasons;
    # also runs that are incomplete, repeated a different number of times, or on another server.
    warnings: tuple[str, ...] = ()
    overall: RateDelta
    by_tag: dict[str, RateDelta] = Field(default_factory=dict)
    by_category: dict[str, RateDelta] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)  # transition -> number of cases
    cases: tuple[CaseChange, ...] = ()
    # Cause linking (bot.compare.causes), when the caller knew the diff between the two trees (check does, compare
    # cannot): `linked` says it ran; each cause names changed lines and the regressed cases that used them.
    linked: bool = False
    changed_files: tuple[str, ...] = ()
    causes: tuple[Cause, ...] = ()
    unexplained: tuple[str, ...] = ()  # regressed cases whose used spans the diff did not touch
    uncited_files: tuple[str, ...] = ()  # changed files that no case's `used` names (bot.compare.causes)
    # Cost, tokens, latency and query cost, base against head, case by case (bot.compare.metrics).
    metrics: tuple[MetricDelta, ...] = ()

    def causes_of(self, case_id: str) -> list[Cause]:
        return [c for c in self.causes if case_id in c.cases]

    def of(self, transition: str) -> list[CaseChange]:
        return [c for c in self.cases if c.transition == transition]

    def judged_as(self, transition: str) -> list[CaseChange]:
        """Like `of`, counting a renamed case by its outcome: `judged_as("regressed")` is every regression."""
        return [c for c in self.cases if c.judged == transition]


# ---------------------------------------------------------------------------------------------------------------
# compare_runs


def compare_runs(
    base: RunResult,
    head: RunResult,
    *,
    gate: GateSettings = GateSettings(),
    force: bool = False,
    edited_against_base: dict[str, str] | None = None,
    latency_gated: bool = False,
) -> Comparison:
    """Pair the cases of two runs (by id, then renames by content), classify each change and decide the
    verdict under `gate`.

    `edited_against_base` ({id: status}, from `check`): the head's answers to the cases it edited, judged by the
    base's version of each; the gate refuses one that passed on base and fails its base version.
    `latency_gated`: both runs asked their agent in the same job (`check` without a cached base run), so their
    latencies may be gated (bot.compare.metrics); the other metrics are exact and always may.

    Runs that cannot be judged against each other are `incomparable` unless `force`, which compares them
    anyway and keeps the reasons as warnings. Forced past a different case selection, cases only one run
    holds are listed but not judged: they were left out, not added or deleted."""
    problems = incomparable_reasons(base, head)
    changes = pair_cases(base, head, gate=gate, against_base=edited_against_base)
    warnings = [*run_warnings(base, head), *edited_warning(changes)]
    rates = _rates(base.cases, head.cases)
    overall = rates.overall
    metrics = compare_metrics(base, head, latency_gated=latency_gated)
    if problems and not force:
        verdict: Verdict = "incomparable"
        reasons = problems
    else:
        warnings = [*(f"compared anyway (--force): {p}" for p in problems), *warnings]
        membership = selection(base.meta) == selection(head.meta)
        if not membership:
            warnings.append(
                f"base ran {describe_selection(base.meta)}, head {describe_selection(head.meta)}: "
                "cases only one run holds are listed as new or removed, not judged"
            )
        reasons = gate_reasons(changes, overall, gate, judge_removed=membership)
        reasons += metric_reasons(metrics, gate)
        reasons += plan_cost_reasons(base, head, gate.max_query_cost_ratio)
        verdict = "regressions" if reasons else "pass"
    return Comparison(
        verdict=verdict,
        reasons=tuple(reasons),
        gate=gate,
        base=base.meta,
        head=head.meta,
        forced=bool(problems) and force,
        warnings=tuple(warnings),
        overall=overall,
        by_tag=rates.by_tag,
        by_category=rates.by_category,
        counts=_counts(changes),
        cases=tuple(changes),
        metrics=metrics,
    )


def compare_head_only(
    head: RunResult, *, gate: GateSettings = GateSettings(), reason: str = NO_BASELINE
) -> Comparison:
    """The comparison for a base commit without sqlcanary (no suite or no config): there is no baseline, every
    case is `new`, and only `gate.min_pass_rate` decides (the verdict is `pass` when it is unset). `reason`
    says why there is no baseline; the reports show it with the head's pass rate."""
    unanswered = unanswered_reasons(head, "head")
    changes = new_cases(head, gate=gate)
    counts = _counts(changes)
    rates = _rates((), head.cases)  # no base: every rate's base side is empty
    overall = rates.overall
    reasons = unanswered or pass_rate_floor(overall.head_rate, gate)
    warnings = (
        [] if head.meta.complete else ["the head run is incomplete: cases it did not reach are missing"]
    )
    return Comparison(
        verdict="incomparable" if unanswered else "regressions" if reasons else "pass",
        reasons=tuple(reasons),
        gate=gate,
        baseline="none",
        baseline_reason=reason,
        base=None,
        head=head.meta,
        warnings=tuple(warnings),
        overall=overall,
        by_tag=rates.by_tag,
        by_category=rates.by_category,
        counts=counts,
        cases=tuple(changes),
    )


class _Rates(NamedTuple):
    overall: RateDelta
    by_tag: dict[str, RateDelta]
    by_category: dict[str, RateDelta]


def _rates(base: Sequence[CaseResult], head: Sequence[CaseResult]) -> _Rates:
    """The pass rates of two sets of cases, overall, by tag and by category, and how each moved."""
    b, h = summarize(tuple(base)), summarize(tuple(head))
    return _Rates(rate_delta(b, h), _deltas(b.by_tag, h.by_tag), _deltas(b.by_category, h.by_category))


def _counts(changes: list[CaseChange]) -> dict[str, int]:
    return {t: sum(c.transition == t for c in changes) for t in TRANSITIONS}


def rate_delta(base: Counts, head: Counts) -> RateDelta:
    b, h = base.pass_rate, head.pass_rate
    return RateDelta(
        base=Counts(**base.model_dump(include=set(Counts.model_fields))),
        head=Counts(**head.model_dump(include=set(Counts.model_fields))),
        base_rate=b,
        head_rate=h,
        delta=None if b is None or h is None else h - b,
    )


def _deltas(base: dict[str, Counts], head: dict[str, Counts]) -> dict[str, RateDelta]:
    return {
        k: rate_delta(base.get(k, Counts()), head.get(k, Counts())) for k in sorted(base.keys() | head.keys())
    }
