"""RepairOutcome: what the repair loop tried, kept and refused, and why (frozen pydantic, written to disk)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from bot.base.results import Counts, FrozenModel, LLMUsage

REPAIR_SCHEMA_VERSION = 1

AttemptOutcome = Literal[
    "accepted",  # fixed the case, the whole suite stayed green: kept
    "refused",  # the plan failed validation: nothing written
    "bad_reply",  # the reply was not a usable plan
    "no_change",  # the model proposed nothing (status perfect / no actions)
    "still_failing",  # applied, the case still fails: reverted
    "broke_others",  # applied, fixed the case, broke cases that passed: reverted
    "dry_run",  # valid, shown, not applied
]


class AttemptRecord(FrozenModel):
    n: int
    outcome: AttemptOutcome
    reason: str = ""
    plan: dict[str, Any] | None = None
    diff: str = ""
    broke: tuple[str, ...] = ()
    cached: bool = False  # the LLM reply came from the cache


class CaseRepair(FrozenModel):
    id: str
    question: str = ""
    before: str
    after: str
    repaired: bool = False
    attempts: tuple[AttemptRecord, ...] = ()
    note: str = ""  # why the case was not attempted, or why it stopped
    group: str = ""  # the cause it shares with other failing cases (bot.repair.select), the order it came in

    @property
    def accepted(self) -> AttemptRecord | None:
        return next((a for a in self.attempts if a.outcome == "accepted"), None)

    @property
    def last_reason(self) -> str:
        return self.note or (self.attempts[-1].reason if self.attempts else "")


class CritiqueRecord(FrozenModel):
    n: int
    status: str
    outcome: AttemptOutcome
    reason: str = ""
    plan: dict[str, Any] | None = None
    diff: str = ""


class LLMStats(LLMUsage):
    """A repair's LLM usage (the same counters as a run's) and the plans the loop asked for."""

    requests: int = 0  # plans asked for by the loop

    @property
    def parse_success_rate(self) -> float | None:
        total = self.parse_ok + self.parse_repaired + self.parse_failed
        return None if total == 0 else (self.parse_ok + self.parse_repaired) / total


class RevertRecord(FrozenModel):
    """Without an LLM (bot.repair.offline): the verified partial revert of the KB changes since the base commit
    that broke the regressed cases, applied when it holds (not under --dry-run)."""

    note: str  # what was done, in one sentence ("no LLM configured: applied the verified partial revert of ...")
    holds: bool = False
    applied: bool = False
    reason: str = ""  # why no partial revert holds; "" when it holds
    base_sha: str = ""
    regressed: tuple[str, ...] = ()  # the cases that passed at the base and fail at the head
    reverted: tuple[str, ...] = ()  # the KB line changes given their base lines back ("kb/m.yaml line 5")
    kept: tuple[str, ...] = ()  # the other KB changes since the base, kept
    restored: tuple[str, ...] = ()  # regressed cases that pass with the revert
    diff: str = ""  # the revert's diff (kb_diff holds it only once applied)
    agent_calls: int = 0  # asked to find the changes and to verify the revert on the whole suite


class RepairOutcome(FrozenModel):
    schema_version: int = REPAIR_SCHEMA_VERSION
    suite: str
    dry_run: bool = False
    evaluated_only: bool = False
    stopped: str | None = None  # why the loop ended early (budget, LLM error); None when it ran through
    cases: tuple[CaseRepair, ...] = ()
    skipped: tuple[str, ...] = ()  # failing cases over --max-failures
    critique: tuple[CritiqueRecord, ...] = ()
    files_changed: tuple[str, ...] = ()
    kb_diff: str = ""
    issues_found: tuple[str, ...] = ()
    improvements_made: tuple[str, ...] = ()
    base_pass_rate: float | None = None
    head_pass_rate: float | None = None
    repaired_pass_rate: float | None = None
    counts_before: Counts = Counts()
    counts_after: Counts = Counts()
    llm: LLMStats = LLMStats()
    final_statuses: dict[str, str] = Field(default_factory=dict)
    # Set when the run given was not the whole suite (`run --id X`): its pass rate is not the suite's, so the
    # head figures are of the whole suite before any edit, like the repaired ones.
    scope: str = ""
    # A repair without an LLM (bot.repair.offline): its partial revert. None for the LLM's loop.
    revert: RevertRecord | None = None

    @property
    def repaired(self) -> tuple[CaseRepair, ...]:
        return tuple(c for c in self.cases if c.repaired)

    @property
    def unrepaired(self) -> tuple[CaseRepair, ...]:
        return tuple(c for c in self.cases if not c.repaired)
