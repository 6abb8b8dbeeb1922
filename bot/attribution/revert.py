"""The partial revert: the union of the regressed cases' causal changes reverted, verified on the whole suite.

It holds when every case that passes at the head still passes with it (so the pull request's own fixes stay: a
mixed hunk's fixing line is a change of its own, never reverted unless it is causal) and every case the KB
broke passes again. Reverting every KB change of the pull request is a whole revert, not a partial one: no
candidate then. It needs no LLM; the repair offers it, labelled as a revert, when no LLM edit holds.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Literal

from bot.attribution.delta import Attribution, Evaluator, Status
from bot.attribution.hunks import Change, ChangeSet
from bot.base.results import Counts, FrozenModel
from bot.compare.diff import unified_diff

RevertVerdict = Literal[
    "restored",  # regressed at the head, passes with the revert
    "still_regressed",  # regressed at the head, still fails
    "kept",  # passes at the head and with the revert
    "broken",  # passes at the head, fails with the revert
    "also_fixed",  # failed at the head (not a regression), passes with the revert
    "still_failing",  # failed at the head (not a regression), still fails
]


class CaseOutcome(FrozenModel):
    id: str
    head: str  # its status at the head
    reverted: str  # its status with the revert
    verdict: RevertVerdict
    reason: str = ""  # why it fails with the revert


class RevertCandidate(FrozenModel):
    holds: bool
    reason: str = ""  # why there is no verified partial revert; "" when it holds
    reverted: tuple[Change, ...] = ()  # the changes given their base lines back
    kept: tuple[Change, ...] = ()  # the pull request's other KB changes, kept
    files: dict[str, str | None] = {}  # {repository path: new text, None: removed} of the files it changes
    diff: str = ""  # unified diff from the head's KB files to `files`
    cases: tuple[CaseOutcome, ...] = ()
    base_pass_rate: float | None = None
    head_pass_rate: float | None = None
    reverted_pass_rate: float | None = None
    agent_calls: int = 0  # the verification's agent calls

    @property
    def restored(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.cases if c.verdict == "restored")

    @property
    def broken(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.cases if c.verdict == "broken")

    @property
    def still_failing(self) -> tuple[CaseOutcome, ...]:
        return tuple(c for c in self.cases if c.reverted != "passed")


def pass_rate(statuses: Collection[str]) -> float | None:
    """Passed over decidable cases (invalid ones excluded), as a run's summary counts it."""
    listed = list(statuses)
    return Counts(total=len(listed), passed=listed.count("passed"), invalid=listed.count("invalid")).pass_rate


def _verdict(head: str, now: Status, regressed: bool) -> RevertVerdict:
    if regressed:
        return "restored" if now.passed else "still_regressed"
    if head == "passed":
        return "kept" if now.passed else "broken"
    return "also_fixed" if now.passed else "still_failing"


def partial_revert(
    attribution: Attribution,
    changes: ChangeSet,
    evaluator: Evaluator,
    *,
    head: Mapping[str, str],
    regressed: Collection[str] = (),
    base_pass_rate: float | None = None,
) -> RevertCandidate:
    """Revert the union of `attribution`'s causal changes and run every case of `head` ({case id: its status at
    the head}, the whole suite) on it. `regressed`: the comparison's regressed ids (default: the attributed)."""
    causal = attribution.causal
    regressed = set(regressed) or {c.id for c in attribution.cases}
    head_rate = pass_rate(head.values())
    if not causal:
        undecided = [c.id for c in attribution.cases if c.verdict == "undecided"]
        why = (
            f"the cause of {len(undecided)} regressed case(s) was not found: {attribution.stopped}"
            if undecided
            else "no regressed case is caused by a KB change of the pull request: there is nothing to revert"
        )
        return RevertCandidate(
            holds=False, reason=why, base_pass_rate=base_pass_rate, head_pass_rate=head_rate
        )
    if set(causal) == set(changes.ids):
        why = (
            "the regressed cases are caused by every KB change of the pull request: reverting them all is a "
            "whole revert, not a partial one"
        )
        return RevertCandidate(
            holds=False, reason=why, base_pass_rate=base_pass_rate, head_pass_rate=head_rate
        )
    before = evaluator.agent_calls
    now = evaluator.evaluate(frozenset(causal), sorted(head))
    outcomes = tuple(
        CaseOutcome(
            id=i,
            head=head[i],
            reverted=now[i].status,
            verdict=_verdict(head[i], now[i], i in regressed),
            reason="" if now[i].passed else now[i].reason,
        )
        for i in sorted(head)
    )
    texts = changes.texts(causal)
    files = {p: t for p, t in texts.items() if t != changes.head.get(p)}
    caused = {c.id for c in attribution.cases if c.verdict == "caused"}
    broken = [c.id for c in outcomes if c.verdict == "broken"]
    left = [c.id for c in outcomes if c.verdict == "still_regressed" and c.id in caused]
    problems = []
    if broken:
        problems.append(
            f"with the revert {len(broken)} case(s) that pass at the head fail: {', '.join(broken)}"
        )
    if left:
        problems.append(f"with the revert {len(left)} case(s) the KB broke still fail: {', '.join(left)}")
    why = "; ".join(problems)
    return RevertCandidate(
        holds=not why,
        reason=why,
        reverted=tuple(changes.change(i) for i in causal),
        kept=tuple(c for c in changes.changes if c.id not in set(causal)),
        files=files,
        diff=unified_diff({p: changes.head.get(p) for p in files}, files),
        cases=outcomes,
        reverted_pass_rate=pass_rate([c.reverted for c in outcomes]),
        agent_calls=evaluator.agent_calls - before,
        base_pass_rate=base_pass_rate,
        head_pass_rate=head_rate,
    )
