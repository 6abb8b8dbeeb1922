"""Which failing cases the repair loop takes first (`--max-failures`): grouped by what they share, the most
promising group first, so that one edit can repair a whole group and the budget is not spent on five cases of
one cause while another cause is never looked at.

- From a check (`--from-check`), the groups are the comparison's causes: the changed KB lines each regressed
  case used. A bigger group first; cases no cause explains come last.
- Otherwise, the KB spans the answers used (`used`). A span is suspect when the answers that use it fail: the
  share of its users that failed, then how many did (spectrum-based fault localisation: a table note every
  answer reads, passing or not, is no suspect). Each case goes to the group of its most suspect span.

Cases are chosen round-robin over the groups (the first of each group, then the second, ...), then listed
group by group, so a case an earlier edit already repaired is found at once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.base.results import CaseResult
from bot.compare.comparison import Comparison

NO_CAUSE = "no shared cause"


@dataclass(frozen=True)
class Group:
    cause: str  # "kb/metrics/cpc.yaml lines 6" or a used span "kb/metrics/cpc.yaml:1-7"
    cases: tuple[CaseResult, ...]


def group_failures(
    failing: Sequence[CaseResult], passing: Sequence[CaseResult], *, comparison: Comparison | None = None
) -> list[Group]:
    """The failing cases in groups, most promising first; every case in exactly one group."""
    by_id = {c.id: c for c in failing}
    groups: list[Group] = []
    left = dict(by_id)
    if comparison is not None and comparison.causes:
        causes = sorted(comparison.causes, key=lambda c: -sum(i in left for i in c.cases))
        for cause in causes:
            members = tuple(left.pop(i) for i in cause.cases if i in left)
            if members:
                groups.append(Group(f"{cause.file} {cause.where}", members))
    groups += _by_spans([c for c in failing if c.id in left], passing)
    return groups


def _by_spans(failing: Sequence[CaseResult], passing: Sequence[CaseResult]) -> list[Group]:
    users_failing: dict[str, int] = {}
    users_passing: dict[str, int] = {}
    for case in failing:
        for span in set(case.prediction.used):
            users_failing[span] = users_failing.get(span, 0) + 1
    for case in passing:
        for span in set(case.prediction.used):
            users_passing[span] = users_passing.get(span, 0) + 1

    def suspicion(span: str) -> tuple[float, int]:
        f = users_failing.get(span, 0)
        return (f / (f + users_passing.get(span, 0)) if f else 0.0), f

    members: dict[str, list[CaseResult]] = {}
    for case in failing:
        spans = sorted(set(case.prediction.used), key=lambda s: (tuple(-x for x in suspicion(s)), s))
        members.setdefault(spans[0] if spans else NO_CAUSE, []).append(case)
    order = sorted(members, key=lambda s: (s == NO_CAUSE, -suspicion(s)[0], -len(members[s]), s))
    return [Group(s, tuple(members[s])) for s in order]


def choose(groups: Sequence[Group], limit: int) -> tuple[list[tuple[CaseResult, str]], list[str]]:
    """([(case, its group's cause)] to repair, listed group by group; ids left over), `limit` cases at most."""
    picked: set[str] = set()
    depth = 0
    while len(picked) < limit and any(depth < len(g.cases) for g in groups):
        for g in groups:
            if depth < len(g.cases) and len(picked) < limit:
                picked.add(g.cases[depth].id)
        depth += 1
    chosen = [(c, g.cause) for g in groups for c in g.cases if c.id in picked]
    skipped = [c.id for g in groups for c in g.cases if c.id not in picked]
    return chosen, skipped
