"""compare_runs(base, head, ...) -> Comparison: which cases a change broke or fixed, and how sure we are. Pure.

The models below are the contract the reports, the check command and the GitHub adapter read.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.results import Counts, RunMeta

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


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GateSettings(_Frozen):
    """When a comparison fails the gate. A regression is only called when it is significant (exact McNemar
    test on the paired attempts, p < alpha) and at least `min_regression_count` attempts moved."""

    max_regressions: int = Field(default=0, ge=0)
    min_pass_rate: float | None = Field(default=None, ge=0, le=1)
    max_pass_rate_drop: float | None = Field(default=None, ge=0, le=1)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    min_regression_count: int = Field(default=1, ge=1)


class CaseChange(_Frozen):
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


class RateDelta(_Frozen):
    base: Counts
    head: Counts
    base_rate: float | None
    head_rate: float | None
    delta: float | None  # head_rate - base_rate


class Comparison(_Frozen):
    schema_version: int = COMPARISON_SCHEMA_VERSION
    verdict: Verdict
    reasons: tuple[str, ...] = ()  # why the gate failed, or why the runs are incomparable
    gate: GateSettings = GateSettings()
    base: RunMeta
    head: RunMeta
    forced: bool = False  # compared despite differing fingerprints (--force)
    overall: RateDelta
    by_tag: dict[str, RateDelta] = Field(default_factory=dict)
    by_category: dict[str, RateDelta] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)  # transition -> number of cases
    cases: tuple[CaseChange, ...] = ()

    def of(self, transition: str) -> list[CaseChange]:
        return [c for c in self.cases if c.transition == transition]
