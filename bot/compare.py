"""compare_runs(base, head, ...) -> Comparison: which cases a change broke or fixed, and how sure we are. Pure.

The models below are the contract the reports, the check command and the GitHub adapter read.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bot.errors import ResultFileError
from bot.results import CaseResult, Counts, FrozenModel, GateSettings, RunMeta, RunResult, summarize
from bot.stats import discordant_pairs, mcnemar_one_sided

COMPARISON_SCHEMA_VERSION = 1

Transition = Literal[
    "still_passing",  # passed in both
    "regressed",  # passed in base, fails in head (significantly, when repeated)
    "fixed",  # failed in base, passes in head
    "still_failing",  # failed (or errored) in both
    "new",  # only in head
    "removed",  # only in base
    "became_invalid",  # decidable in base, invalid in head (the gold broke, or the fixture)
    "became_valid",  # invalid in base, decidable in head
    "error_changed",  # failed or errored in both, with a different error class
    "flaky",  # attempts disagree and the difference is not significant: labelled, never failed
]
TRANSITIONS: tuple[str, ...] = (
    "regressed", "fixed", "flaky", "became_invalid", "error_changed", "new", "removed", "became_valid",
    "still_failing", "still_passing",
)  # fmt: skip
Verdict = Literal["pass", "regressions", "incomparable"]


class CaseChange(FrozenModel):
    id: str
    transition: Transition
    category: str = ""
    tags: tuple[str, ...] = ()
    question: str = ""
    base_status: str | None = None
    head_status: str | None = None
    base_passes: int = 0
    base_repeats: int = 0
    head_passes: int = 0
    head_repeats: int = 0
    flaky: bool = False  # attempts disagree (in base or in head)
    p_value: float | None = None  # exact McNemar on paired attempts, when repeated
    base_error_class: str | None = None
    head_error_class: str | None = None
    reason: str = ""  # the head's first difference (or the base's, for a fix)
    structural: str = ""  # the head's structural diff in words, when there is one
    head_sql: str | None = None
    base_sql: str | None = None
    source: str | None = None  # case file:line


class RateDelta(FrozenModel):
    base: Counts
    head: Counts
    base_rate: float | None
    head_rate: float | None
    delta: float | None  # head_rate - base_rate


class Comparison(FrozenModel):
    schema_version: int = COMPARISON_SCHEMA_VERSION
    verdict: Verdict
    reasons: tuple[str, ...] = ()  # why the gate failed, or why the runs are incomparable
    gate: GateSettings = GateSettings()
    base: RunMeta
    head: RunMeta
    forced: bool = False  # compared despite differing fingerprints (--force)
    # Things a reader should know that do not decide the verdict: with --force, the incomparability reasons;
    # also runs that are incomplete, sharded, repeated a different number of times, or on another server.
    warnings: tuple[str, ...] = ()
    overall: RateDelta
    by_tag: dict[str, RateDelta] = Field(default_factory=dict)
    by_category: dict[str, RateDelta] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)  # transition -> number of cases
    cases: tuple[CaseChange, ...] = ()

    def of(self, transition: str) -> list[CaseChange]:
        return [c for c in self.cases if c.transition == transition]


# ---------------------------------------------------------------------------------------------------------------
# compare_runs

_EPS = 1e-9  # pass rates are ratios of small integers: 0.9 must not be "below" 0.9 by a rounding error
_LISTED = 10  # case ids named in a reason before "and N more"


def compare_runs(
    base: RunResult, head: RunResult, *, gate: GateSettings = GateSettings(), force: bool = False
) -> Comparison:
    """Pair the cases of two runs by id, classify each change and decide the verdict under `gate`.

    Runs judged by different rules (evaluator version, preset, fixtures, schema) are `incomparable` unless
    `force`, which compares them anyway and keeps the reasons as warnings."""
    problems = incomparable_reasons(base, head)
    warnings = run_warnings(base, head)
    base_cases, head_cases = _by_id(base, "base"), _by_id(head, "head")
    changes = [
        classify_case(base_cases.get(i), head_cases.get(i), gate=gate) for i in base_cases | head_cases
    ]
    changes.sort(key=lambda c: (TRANSITIONS.index(c.transition), c.id))
    base_sum, head_sum = summarize(base.cases), summarize(head.cases)
    overall = rate_delta(base_sum, head_sum)
    if problems and not force:
        verdict: Verdict = "incomparable"
        reasons = problems
    else:
        warnings = [*(f"compared anyway (--force): {p}" for p in problems), *warnings]
        reasons = gate_reasons(changes, overall, gate)
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
        by_tag=_deltas(base_sum.by_tag, head_sum.by_tag),
        by_category=_deltas(base_sum.by_category, head_sum.by_category),
        counts={t: sum(c.transition == t for c in changes) for t in TRANSITIONS},
        cases=tuple(changes),
    )


def incomparable_reasons(base: RunResult, head: RunResult) -> list[str]:
    """Why two runs cannot be compared: they were judged by different rules or on different data."""
    b, h = base.meta, head.meta
    reasons = []
    if base.schema_version != head.schema_version:
        reasons.append(
            f"RunResult schema version {base.schema_version} in base, {head.schema_version} in head: "
            "written by different sqlcanary versions"
        )
    if b.evaluator_version != h.evaluator_version:
        reasons.append(
            f"evaluator version {b.evaluator_version} in base, {h.evaluator_version} in head: "
            "the scoring rules changed, so a verdict may differ without any change in the answer"
        )
    if b.preset != h.preset:
        reasons.append(
            f"preset `{b.preset}` in base, `{h.preset}` in head: answers were judged by different rules"
        )
    for db in sorted(b.fixtures.keys() & h.fixtures.keys()):
        if b.fixtures[db] != h.fixtures[db]:
            reasons.append(
                f"database `{db}`: fixture fingerprint {b.fixtures[db]} in base, {h.fixtures[db]} in head: "
                "the data changed, so gold answers may differ"
            )
    return reasons


def run_warnings(base: RunResult, head: RunResult) -> list[str]:
    """Differences worth a line in a report that do not make the runs incomparable."""
    warnings = []
    for name, run in (("base", base), ("head", head)):
        if not run.meta.complete:
            warnings.append(f"the {name} run is incomplete: cases it did not reach count as "
                            f"{'removed' if name == 'head' else 'new'}")  # fmt: skip
    b, h = base.meta, head.meta
    if b.shard != h.shard:
        warnings.append(f"base holds {_shard(b.shard)}, head {_shard(h.shard)}: "
                        "cases outside either count as new or removed")  # fmt: skip
    if b.repeats != h.repeats:
        warnings.append(
            f"base repeated each case {b.repeats} time(s), head {h.repeats}: "
            f"only the first {min(b.repeats, h.repeats)} attempt(s) are paired"
        )
    if b.suite != h.suite:
        warnings.append(f"suite `{b.suite}` in base, `{h.suite}` in head")
    major = (b.server_version.split(".")[0], h.server_version.split(".")[0])
    if all(major) and major[0] != major[1]:
        warnings.append(f"PostgreSQL {b.server_version} in base, {h.server_version} in head")
    return warnings


def _shard(shard: str | None) -> str:
    return f"shard {shard}" if shard else "the whole suite"


def _by_id(run: RunResult, name: str) -> dict[str, CaseResult]:
    cases: dict[str, CaseResult] = {}
    for case in run.cases:
        if case.id in cases:
            raise ResultFileError(f"the {name} run holds case {case.id!r} twice", case_id=case.id)
        cases[case.id] = case
    return cases


def _outcomes(case: CaseResult) -> list[bool]:
    """Pass (True) or not, per attempt; a run without repeats has one attempt: the case itself."""
    return [a.status == "passed" for a in case.attempts] if case.attempts else [case.status == "passed"]


def _transition(base: CaseResult, head: CaseResult, gate: GateSettings) -> tuple[Transition, float | None]:
    """Both sides decidable: the classic transition when every attempt agrees, else McNemar on the pairs."""
    b_out, h_out = _outcomes(base), _outcomes(head)
    b, c = discordant_pairs(b_out, h_out)
    # The p-value of the observed direction; meaningful only when a side repeated (K > 1).
    p_value = mcnemar_one_sided(max(b, c), min(b, c)) if max(len(b_out), len(h_out)) > 1 else None
    if len(set(b_out)) == 1 and len(set(h_out)) == 1:  # no disagreement within either run
        before, after = b_out[0], h_out[0]
        if before and after:
            return "still_passing", p_value
        if before != after:
            return ("regressed" if before else "fixed"), p_value
        changed = base.error_class != head.error_class
        return ("error_changed" if changed else "still_failing"), p_value
    if b - c >= gate.min_regression_count and mcnemar_one_sided(b, c) < gate.alpha:
        return "regressed", mcnemar_one_sided(b, c)
    if c - b >= gate.min_regression_count and mcnemar_one_sided(c, b) < gate.alpha:
        return "fixed", mcnemar_one_sided(c, b)
    return "flaky", p_value


def _first_failure(case: CaseResult | None) -> str:
    if case is None:
        return ""
    failing = (a.reason for a in case.attempts if a.status != "passed" and a.reason)
    return case.reason or next(failing, "")


def classify_case(
    base: CaseResult | None, head: CaseResult | None, *, gate: GateSettings = GateSettings()
) -> CaseChange:
    """One case's change from base to head (either may be None: a new or a removed case)."""
    either = head or base
    if either is None:
        raise ValueError("classify_case needs a base or a head case")
    p_value: float | None = None
    if base is None:
        transition: Transition = "new"
    elif head is None:
        transition = "removed"
    elif head.status == "invalid":
        transition = "still_failing" if base.status == "invalid" else "became_invalid"
    elif base.status == "invalid":
        transition = "became_valid"
    else:
        transition, p_value = _transition(base, head, gate)
    flaky = any(len(set(_outcomes(c))) > 1 for c in (base, head) if c is not None)
    if transition in ("fixed", "removed"):
        reason = _first_failure(base)
    else:
        reason = _first_failure(head) or (_first_failure(base) if transition == "flaky" else "")
    structural = head.verdicts.get("structural") if head else None
    return CaseChange(
        id=either.id,
        transition=transition,
        category=either.category,
        tags=either.tags,
        question=either.question,
        base_status=base.status if base else None,
        head_status=head.status if head else None,
        base_passes=base.passes if base else 0,
        base_repeats=base.repeats if base else 0,
        head_passes=head.passes if head else 0,
        head_repeats=head.repeats if head else 0,
        flaky=flaky,
        p_value=p_value,
        base_error_class=base.error_class if base else None,
        head_error_class=head.error_class if head else None,
        reason=reason,
        structural=structural.message if structural else "",
        head_sql=head.prediction.sql if head else None,
        base_sql=base.prediction.sql if base else None,
        source=either.source,
    )


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


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def _ids(changes: list[CaseChange]) -> str:
    ids = [c.id for c in changes]
    more = f" and {len(ids) - _LISTED} more" if len(ids) > _LISTED else ""
    return ", ".join(ids[:_LISTED]) + more


def gate_reasons(changes: list[CaseChange], overall: RateDelta, gate: GateSettings) -> list[str]:
    """Why the gate fails, in plain words; empty when it passes."""
    reasons = []
    regressed = [c for c in changes if c.transition == "regressed"]
    if len(regressed) > gate.max_regressions:
        reasons.append(f"{len(regressed)} case(s) regressed, more than the {gate.max_regressions} allowed: "
                       f"{_ids(regressed)}")  # fmt: skip
    head_rate, base_rate = overall.head_rate, overall.base_rate
    if gate.min_pass_rate is not None:
        if head_rate is None:
            reasons.append(f"the head run has no decidable case, so it cannot reach the minimum pass rate "
                           f"{_pct(gate.min_pass_rate)}")  # fmt: skip
        elif head_rate < gate.min_pass_rate - _EPS:
            reasons.append(
                f"head pass rate {_pct(head_rate)} is below the minimum {_pct(gate.min_pass_rate)}"
            )
    if gate.max_pass_rate_drop is not None and head_rate is not None and base_rate is not None:
        drop = base_rate - head_rate
        if drop > gate.max_pass_rate_drop + _EPS:
            reasons.append(f"pass rate dropped {drop * 100:.1f} points ({_pct(base_rate)} → {_pct(head_rate)}), "
                           f"more than the {gate.max_pass_rate_drop * 100:.1f} allowed")  # fmt: skip
    return reasons
