"""compare_runs(base, head, ...) -> Comparison: which cases a change broke or fixed, and how sure we are. Pure.

The models below are the contract the reports, the check command and the GitHub adapter read.

- Runs that cannot be judged against each other (another suite, a changed fixture of a database both use,
  another case selection or shard, preset or evaluator version) are `incomparable`: see bot.comparable for
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

from collections import defaultdict
from typing import Literal

from pydantic import Field

from bot.causes import Cause
from bot.comparable import describe_selection, incomparable_reasons, run_warnings, selection
from bot.errors import ResultFileError
from bot.gate import gate_reasons, pass_rate_floor
from bot.results import CaseResult, Counts, FrozenModel, GateSettings, RunMeta, RunResult, summarize
from bot.stats import discordant_pairs, mcnemar_one_sided

# 2: `renamed` transition (CaseChange.renamed_from / outcome); head-only comparisons (baseline "none", base
# None, baseline_reason). 3: cause linking (Comparison.causes / unexplained / linked / changed_files;
# CaseChange.gold_sql / head_used / base_used). 4: CaseChange.edited. Older files still read: every new field
# has a default.
COMPARISON_SCHEMA_VERSION = 4

Transition = Literal[
    "still_passing",  # passed in both
    "regressed",  # passed in base, fails or errors in head (significantly, when repeated)
    "fixed",  # failed in base, passes in head
    "still_failing",  # failed (or errored) in both
    "new",  # only in head
    "removed",  # only in base
    "renamed",  # only in base under one id, only in head under another, same content: judged by `outcome`
    "became_invalid",  # decidable in base, invalid in head (the gold broke, or the fixture)
    "became_valid",  # invalid in base, decidable in head
    "error_changed",  # failed or errored in both, with a different error class
    "flaky",  # attempts disagree and the difference is not significant: labelled, never failed
]
TRANSITIONS: tuple[str, ...] = (
    "regressed", "fixed", "flaky", "became_invalid", "error_changed", "renamed", "new", "removed",
    "became_valid", "still_failing", "still_passing",
)  # fmt: skip
Verdict = Literal["pass", "regressions", "incomparable"]
Baseline = Literal["run", "none"]
NO_BASELINE = "the base commit has no sqlcanary suite or config, so there is no base run to compare with"


class CaseChange(FrozenModel):
    id: str  # the head's id (the base's, for a removed case)
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
    renamed_from: str | None = None  # renamed: the id the case had in base
    outcome: Transition | None = None  # renamed: the pair's own transition (still_passing, regressed, ...)
    gold_sql: tuple[str, ...] = ()  # from the suite, when the caller had it (check does; see bot.causes)
    head_used: tuple[str, ...] = ()  # the KB spans each side's answer said it used (Prediction.used)
    base_used: tuple[str, ...] = ()
    # The same id with other content (question, database, gold SQL or category): each side was judged by its
    # own version of the case, so a changed gold can turn a break into a pass. Reported, never hidden.
    edited: bool = False

    @property
    def judged(self) -> Transition:
        """The transition the gate judges: a renamed case by its own outcome, every other by its transition."""
        return self.outcome if self.transition == "renamed" and self.outcome else self.transition


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
    # Cause linking (bot.causes), when the caller knew the diff between the two trees (check does, compare
    # cannot): `linked` says it ran; each cause names changed lines and the regressed cases that used them.
    linked: bool = False
    changed_files: tuple[str, ...] = ()
    causes: tuple[Cause, ...] = ()
    unexplained: tuple[str, ...] = ()  # regressed cases whose used spans the diff did not touch

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
    base: RunResult, head: RunResult, *, gate: GateSettings = GateSettings(), force: bool = False
) -> Comparison:
    """Pair the cases of two runs (by id, then renames by content), classify each change and decide the
    verdict under `gate`.

    Runs that cannot be judged against each other are `incomparable` unless `force`, which compares them
    anyway and keeps the reasons as warnings. Forced past a different case selection, cases only one run
    holds are listed but not judged: they were left out, not added or deleted."""
    problems = incomparable_reasons(base, head)
    changes = pair_cases(base, head, gate=gate)
    warnings = [*run_warnings(base, head), *edited_warning(changes)]
    base_sum, head_sum = summarize(base.cases), summarize(head.cases)
    overall = rate_delta(base_sum, head_sum)
    if problems and not force:
        verdict: Verdict = "incomparable"
        reasons = problems
    else:
        warnings = [*(f"compared anyway (--force): {p}" for p in problems), *warnings]
        membership = selection(base.meta) == selection(head.meta)
        if not membership:
            warnings.append(f"base ran {describe_selection(base.meta)}, head {describe_selection(head.meta)}: "
                            "cases only one run holds are listed as new or removed, not judged")  # fmt: skip
        reasons = gate_reasons(changes, overall, gate, judge_removed=membership)
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
        counts=_counts(changes),
        cases=tuple(changes),
    )


def compare_head_only(
    head: RunResult, *, gate: GateSettings = GateSettings(), reason: str = NO_BASELINE
) -> Comparison:
    """The comparison for a base commit without sqlcanary (no suite or no config): there is no baseline, every
    case is `new`, and only `gate.min_pass_rate` decides (the verdict is `pass` when it is unset). `reason`
    says why there is no baseline; the reports show it with the head's pass rate."""
    changes = [classify_case(None, case, gate=gate) for case in _by_id(head, "head").values()]
    changes.sort(key=_order)
    head_sum = summarize(head.cases)
    overall = rate_delta(Counts(), head_sum)
    reasons = pass_rate_floor(overall.head_rate, gate)
    warnings = (
        [] if head.meta.complete else ["the head run is incomplete: cases it did not reach are missing"]
    )
    return Comparison(
        verdict="regressions" if reasons else "pass",
        reasons=tuple(reasons),
        gate=gate,
        baseline="none",
        baseline_reason=reason,
        base=None,
        head=head.meta,
        warnings=tuple(warnings),
        overall=overall,
        by_tag=_deltas({}, head_sum.by_tag),
        by_category=_deltas({}, head_sum.by_category),
        counts=_counts(changes),
        cases=tuple(changes),
    )


def _counts(changes: list[CaseChange]) -> dict[str, int]:
    return {t: sum(c.transition == t for c in changes) for t in TRANSITIONS}


def _order(change: CaseChange) -> tuple[int, int, str]:
    """By transition; renamed cases by their outcome within (a renamed regression first); then by id."""
    return TRANSITIONS.index(change.transition), TRANSITIONS.index(change.judged), change.id


def pair_cases(base: RunResult, head: RunResult, *, gate: GateSettings = GateSettings()) -> list[CaseChange]:
    """Every case's change, in report order: pairs by id, then the removed and new cases that are renames."""
    base_cases, head_cases = _by_id(base, "base"), _by_id(head, "head")
    renames = find_renames(base_cases, head_cases)  # head id -> base id
    renamed_base = set(renames.values())
    changes = []
    for i in base_cases | head_cases:
        if i in renames:
            changes.append(_renamed(base_cases[renames[i]], head_cases[i], gate))
        elif i not in renamed_base:
            change = classify_case(base_cases.get(i), head_cases.get(i), gate=gate)
            if _edited(base_cases.get(i), head_cases.get(i)):
                change = change.model_copy(update={"edited": True})
            changes.append(change)
    changes.sort(key=_order)
    return changes


def find_renames(base: dict[str, CaseResult], head: dict[str, CaseResult]) -> dict[str, str]:
    """{head id: base id} for each case only in base and case only in head with the same content hash, when
    that hash is unique on both sides (two cases asking the same thing cannot tell which is which)."""
    removed: dict[str, list[str]] = defaultdict(list)
    new: dict[str, list[str]] = defaultdict(list)
    for i, case in base.items():
        if i not in head and case.case_hash:
            removed[case.case_hash].append(i)
    for i, case in head.items():
        if i not in base and case.case_hash:
            new[case.case_hash].append(i)
    return {new[h][0]: ids[0] for h, ids in removed.items() if len(ids) == 1 and len(new.get(h, ())) == 1}


def _edited(base: CaseResult | None, head: CaseResult | None) -> bool:
    return bool(base and head and base.case_hash and head.case_hash and base.case_hash != head.case_hash)


def edited_warning(changes: list[CaseChange]) -> list[str]:
    """The cases this change edited, for the reports' notes: their verdicts use the new version."""
    ids = [c.id for c in changes if c.edited]
    if not ids:
        return []
    shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    return [f"{len(ids)} case(s) edited by this change (question, database, gold SQL or category): {shown}. Each "
            "side was judged by its own version, so review that the new gold still asks what the old one did"]  # fmt: skip


def _renamed(base: CaseResult, head: CaseResult, gate: GateSettings) -> CaseChange:
    change = classify_case(base, head, gate=gate)
    return change.model_copy(
        update={"transition": "renamed", "outcome": change.transition, "renamed_from": base.id}
    )


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
        head_used=head.prediction.used if head else (),
        base_used=base.prediction.used if base else (),
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
