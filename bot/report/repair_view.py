"""The repair pull request's body as data: what was wrong, each KB edit with its rationale and kind (an LLM edit
or the partial revert of the source pull request's changes), the pass rates base → head → repaired, the cases
still failing, the LLM's cost, and the token that opened it. Built from a RepairOutcome and/or a RevertCandidate
(read through bot.report.repair_sources); `trim_repair_view` shortens it to fit GitHub's body limit."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from bot.base.results import LLMUsage
from bot.base.textfilters import truncate_middle
from bot.report.repair_sources import AttemptSource, OutcomeSource, RevertSource

FixedBy = Literal["llm_edit", "revert", "none"]  # what the repair pull request holds
TokenKind = Literal["github_token", "repair_token"]  # which token opened it (GITHUB_TOKEN starts no CI)
EditKind = Literal["llm_edit", "review", "revert"]
MAX_ITEMS = 20  # issues and improvements listed (LLM text)
MAX_DIFF_LINE = 400  # characters of one diff line shown
_FAILING = ("failed", "errored")


@dataclass(frozen=True)
class KBEdit:
    """One KB diff of the repair with why it was made."""

    kind: EditKind
    diff: str
    files: tuple[str, ...]
    cases: tuple[str, ...] = ()  # the cases it made pass (an LLM edit: the case it was asked for)
    rationale: str = ""  # the LLM's reasoning (untrusted text), or what the revert does
    improvements: tuple[str, ...] = ()
    reverted: tuple[str, ...] = ()  # a revert: the source pull request's changes given their base lines back
    kept: tuple[str, ...] = ()  # a revert: its other KB changes, kept
    cut_lines: int = 0  # lines of the diff left out to fit the body

    @property
    def lines(self) -> int:
        return len(self.diff.splitlines())


@dataclass(frozen=True)
class StillFailing:
    id: str
    status: str
    reason: str


@dataclass(frozen=True)
class RepairPRView:
    pr_number: int
    fixed_by: FixedBy
    token: TokenKind
    base_rate: float | None
    head_rate: float | None
    repaired_rate: float | None
    issues: tuple[str, ...] = ()
    improvements: tuple[str, ...] = ()
    edits: tuple[KBEdit, ...] = ()
    fixed: tuple[str, ...] = ()  # cases that fail at the head and pass with the repair
    still_failing: tuple[StillFailing, ...] = ()
    files: tuple[str, ...] = ()  # the KB files the repair changes
    llm: LLMUsage | None = None  # None: no LLM was asked
    agent_calls: int = 0  # the revert's verification
    stopped: str = ""  # why the loop ended early
    note: str = ""  # the caller's word on the choice (why no LLM edit, why no revert)
    source_url: str | None = None
    workflow: str = ""  # the workflow to re-run, by name
    omitted_edits: int = 0
    omitted_failing: int = 0

    @property
    def branch(self) -> str:
        return f"sqlcanary/repair/pr-{self.pr_number}"

    @property
    def cut_lines(self) -> int:
        return sum(e.cut_lines for e in self.edits)


def _files_of(diff: str) -> tuple[str, ...]:
    """The files a unified diff (git style a/ b/ names) changes, in its order."""
    found: dict[str, None] = {}
    old = ""
    for line in diff.splitlines():
        if line.startswith("--- "):
            old = line[4:].removeprefix("a/")
        elif line.startswith("+++ "):
            new = line[4:].removeprefix("b/")
            found[new if new != "/dev/null" else old] = None
    return tuple(found)


def _short_lines(diff: str) -> str:
    if all(len(line) <= MAX_DIFF_LINE for line in diff.splitlines()):
        return diff
    return "\n".join(truncate_middle(line, MAX_DIFF_LINE) for line in diff.splitlines()) + "\n"


def _texts(plan: object, key: str) -> tuple[str, ...]:
    value = plan.get(key) if isinstance(plan, dict) else None
    return tuple(str(v) for v in value[:MAX_ITEMS]) if isinstance(value, list) else ()


def _llm_edit(attempt: AttemptSource, kind: EditKind, cases: tuple[str, ...]) -> KBEdit:
    plan = dict(attempt.plan or {})
    return KBEdit(
        kind=kind,
        diff=_short_lines(attempt.diff),
        files=_files_of(attempt.diff),
        cases=cases,
        rationale=str(plan.get("reasoning") or ""),
        improvements=_texts(plan, "improvements_made"),
    )


def _llm_edits(outcome: OutcomeSource) -> tuple[KBEdit, ...]:
    edits = [
        _llm_edit(a, "llm_edit", (c.id,))
        for c in outcome.cases
        for a in c.attempts
        if a.outcome == "accepted" and a.diff
    ]
    edits += [_llm_edit(r, "review", ()) for r in outcome.critique if r.outcome == "accepted" and r.diff]
    if not edits and outcome.kb_diff:
        edits.append(KBEdit("llm_edit", _short_lines(outcome.kb_diff), _files_of(outcome.kb_diff)))
    return tuple(edits)


def _revert_edit(revert: RevertSource, pr_number: int) -> KBEdit:
    reverted = tuple(c.describe() for c in revert.reverted)
    why = (
        f"Gives {len(reverted)} of #{pr_number}'s KB line changes their base lines back: the smallest set whose "
        f"revert makes the regressed cases pass again, found by delta debugging; its other {len(revert.kept)} "
        "change(s) stay. Verified on the whole suite."
    )
    return KBEdit(
        kind="revert",
        diff=_short_lines(revert.diff),
        files=tuple(sorted(revert.files)) or _files_of(revert.diff),
        cases=tuple(revert.restored),
        rationale=why,
        reverted=reverted,
        kept=tuple(c.describe() for c in revert.kept),
    )


def _failing_from_outcome(outcome: OutcomeSource) -> tuple[StillFailing, ...]:
    reasons = {c.id: c.last_reason for c in outcome.cases if not c.repaired}
    skipped = set(outcome.skipped)
    statuses = dict(outcome.final_statuses) or {i: "failed" for i in [*reasons, *skipped]}
    out = []
    for case_id, status in sorted(statuses.items()):
        if status not in _FAILING:
            continue
        if case_id in reasons:
            why = reasons[case_id] or "no plan held"
        elif case_id in skipped:
            why = "not attempted: over the failing-case limit, or the loop stopped"
        else:
            why = "not attempted"
        out.append(StillFailing(case_id, status, why))
    return tuple(out)


def _failing_from_revert(revert: RevertSource) -> tuple[StillFailing, ...]:
    return tuple(
        StillFailing(c.id, c.reverted, c.reason or c.verdict.replace("_", " "))
        for c in revert.cases
        if c.reverted in _FAILING
    )


def _fixed_by(outcome: OutcomeSource | None, revert: RevertSource | None) -> FixedBy:
    if outcome is not None and outcome.files_changed:
        return "llm_edit"
    if revert is not None and revert.holds and revert.diff:
        return "revert"
    return "none"


class Rates(NamedTuple):
    """The pass rates the body reports: base → head → repaired."""

    base: float | None
    head: float | None
    repaired: float | None


def build_repair_pr_view(
    *,
    pr_number: int,
    rates: Rates,
    token: TokenKind,
    outcome: OutcomeSource | None = None,
    revert: RevertSource | None = None,
    source_url: str | None = None,
    workflow: str = "",
    note: str = "",
) -> RepairPRView:
    """The body's view. An LLM edit that holds (outcome.files_changed) is preferred; else the verified partial
    revert (revert.holds); else nothing ("none"). The pass rates are the caller's, as outcome.json has them."""
    fixed_by = _fixed_by(outcome, revert)
    view = RepairPRView(
        pr_number=pr_number,
        fixed_by=fixed_by,
        token=token,
        base_rate=rates.base,
        head_rate=rates.head,
        repaired_rate=rates.repaired,
        llm=outcome.llm if outcome is not None and outcome.llm.calls else None,
        stopped=(outcome.stopped or "") if outcome is not None else "",
        note=note,
        source_url=source_url,
        workflow=workflow,
    )
    if fixed_by == "revert" and revert is not None:
        edit = _revert_edit(revert, pr_number)
        return dataclasses.replace(
            view,
            issues=tuple(
                f"`{c}` (changed by #{pr_number}) broke cases that pass on the base" for c in edit.reverted
            ),
            improvements=tuple(f"`{c}` given its base lines back" for c in edit.reverted),
            edits=(edit,),
            fixed=edit.cases,
            still_failing=_failing_from_revert(revert),
            files=edit.files,
            agent_calls=revert.agent_calls,
        )
    if outcome is not None:
        return dataclasses.replace(
            view,
            issues=tuple(outcome.issues_found[:MAX_ITEMS]),
            improvements=tuple(outcome.improvements_made[:MAX_ITEMS]),
            edits=_llm_edits(outcome) if fixed_by == "llm_edit" else (),
            fixed=tuple(c.id for c in outcome.cases if c.repaired),
            still_failing=_failing_from_outcome(outcome),
            files=tuple(outcome.files_changed),
        )
    return dataclasses.replace(view, still_failing=_failing_from_revert(revert) if revert else ())


def _cut(edit: KBEdit, lines: int | None) -> KBEdit:
    if lines is None or edit.lines <= lines:
        return edit
    kept = edit.diff.splitlines()[:lines]
    return dataclasses.replace(
        edit, diff="\n".join(kept) + ("\n" if kept else ""), cut_lines=edit.lines - len(kept)
    )


def trim_repair_view(
    view: RepairPRView,
    *,
    diff_lines: int | None = None,
    failing: int | None = None,
    edits: int | None = None,
) -> RepairPRView:
    """The view with each diff cut to `diff_lines` whole lines, the first `failing` still-failing cases and the
    first `edits` edits (None: all); what is left out is counted, so the body can say so."""
    shown: Sequence[KBEdit] = view.edits if edits is None else view.edits[:edits]
    rows = view.still_failing if failing is None else view.still_failing[:failing]
    return dataclasses.replace(
        view,
        edits=tuple(_cut(e, diff_lines) for e in shown),
        still_failing=rows,
        omitted_edits=view.omitted_edits + len(view.edits) - len(shown),
        omitted_failing=view.omitted_failing + len(view.still_failing) - len(rows),
    )
