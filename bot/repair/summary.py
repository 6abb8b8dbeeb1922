"""What a repair reports: the baseline its figures start from and the `RepairOutcome` built from the loop's
state when it ends."""

from __future__ import annotations

from typing import Protocol

from bot.base.results import CaseResult, RunResult, count
from bot.cases.model import Suite
from bot.kb.files import KBFiles
from bot.repair.outcome import CaseRepair, CritiqueRecord, LLMStats, RepairOutcome


class LoopState(Protocol):
    """What a repair's report reads of its loop (bot.repair.loop.RepairLoop), which imports this module."""

    run: RunResult
    suite: Suite
    kb: KBFiles
    dry_run: bool
    stopped: str | None
    baseline: dict[str, CaseResult]
    latest: dict[str, CaseResult]
    initial: dict[str, str | None]
    issues: list[str]
    improvements: list[str]

    def full_run(self) -> dict[str, CaseResult]: ...

    def kb_diff(self) -> str: ...

    def llm_stats(self) -> LLMStats: ...


def baseline_of(loop: LoopState) -> dict[str, CaseResult]:
    """The run's results when it covers the whole suite; otherwise a fresh full run (no stale baseline)."""
    have = {c.id: c for c in loop.run.cases}
    if all(c.id in have for c in loop.suite.cases) and loop.run.meta.complete:
        return {c.id: have[c.id] for c in loop.suite.cases}
    return loop.full_run()


def _scope(loop: LoopState) -> str:
    """Says so when the run given is not the whole suite: the head figures are then a fresh run's."""
    ids = {c.id for c in loop.suite.cases}
    total, given = len(ids), sum(c.id in ids for c in loop.run.cases)
    if given == total and loop.run.meta.complete:
        return ""
    return (
        f"the run given held {given} of the suite's {total} case(s); the head and repaired pass rates are "
        f"both of the whole suite"
    )


def build_outcome(
    loop: LoopState,
    cases: list[CaseRepair],
    skipped: list[str],
    critique: list[CritiqueRecord],
    *,
    base_pass_rate: float | None,
    evaluated_only: bool = False,
) -> RepairOutcome:
    before = count(list(loop.baseline.values()) if loop.baseline else list(loop.run.cases))
    after = count(list(loop.latest.values()))
    diff = "" if loop.dry_run else loop.kb_diff()
    changed = (
        tuple(sorted(p for p in loop.initial if loop.kb.read(p) != loop.initial[p]))
        if not loop.dry_run
        else ()
    )
    return RepairOutcome(
        suite=loop.suite.name,
        dry_run=loop.dry_run,
        evaluated_only=evaluated_only,
        stopped=loop.stopped,
        cases=tuple(cases),
        skipped=tuple(skipped),
        critique=tuple(critique),
        files_changed=changed,
        kb_diff=diff,
        issues_found=tuple(dict.fromkeys(loop.issues)),
        improvements_made=tuple(dict.fromkeys(loop.improvements)),
        base_pass_rate=base_pass_rate,
        head_pass_rate=before.pass_rate,
        repaired_pass_rate=after.pass_rate,
        counts_before=before,
        counts_after=after,
        llm=loop.llm_stats(),
        scope=_scope(loop),
        final_statuses={k: v.status for k, v in sorted(loop.latest.items())},
    )
