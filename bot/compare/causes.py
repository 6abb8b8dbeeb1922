"""Cause linking: which lines of the pull request's diff each regressed case's answer drew on. Pure.

An answer lists the KB spans it used (`Prediction.used`, "kb/metrics/dau.yaml:1-14", relative to the suite or
config folder). A regressed case is *explained* by a diff hunk when one of its spans overlaps the lines the hunk
changed: a head span is compared with the hunk's new line range, a base span with its old range (a span deleted
at the head shows only in the base's `used`). Cases sharing the same changed lines of a file form one cause:
"`kb/metrics/dau.yaml` lines 9-10 (changed here) → 15 regressed". A regressed case none of whose spans the diff
touched is "not explained by this diff": the agent or the model changed, or the case is flaky.

The diff is `git diff --unified=0` between the two trees that were evaluated (bot.check.diff.pr_diff), so
that its line numbers are the ones the runs' spans were written against; bot.compare.diff parses it and
bot.compare.spans matches the spans to its hunks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.compare.comparison import Comparison
from bot.compare.diff import Cause, FileDiff, Hunk
from bot.compare.spans import changed_spans, parse_span, repo_path, suite_folder

NOT_EXPLAINED = (
    "not explained by this diff: no KB line these answers used was changed (an agent or model change, or "
    "flakiness)"
)
MAX_UNCITED = 20  # changed files a report names under "not explained" (the rest are counted)


@dataclass(frozen=True)
class Regressed:
    """What cause linking needs of one regressed case."""

    id: str
    head_used: tuple[str, ...] = ()
    base_used: tuple[str, ...] = ()


@dataclass(frozen=True)
class Linked:
    causes: tuple[Cause, ...]
    unexplained: tuple[str, ...]
    by_case: dict[str, tuple[int, ...]]  # case id -> indexes into causes


def link_causes(cases: Sequence[Regressed], diff: Sequence[FileDiff], *, roots: Sequence[str]) -> Linked:
    """Group regressed cases by the changed lines their spans overlap (head spans against new lines, base spans
    against old lines). Within a file, hunks used by exactly the same cases form one cause; causes with more
    cases come first."""
    files = {f.path: f for f in diff}
    hits: dict[str, list[tuple[str, Hunk]]] = {}
    for case in cases:
        found = changed_spans(case.head_used, "head", files, roots)
        found += [h for h in changed_spans(case.base_used, "base", files, roots) if h not in found]
        hits[case.id] = found
    groups: dict[tuple[str, tuple[str, ...]], list[Hunk]] = {}
    for path, f in files.items():
        for hunk in f.hunks:
            ids = tuple(sorted(c.id for c in cases if (path, hunk) in hits[c.id]))
            if ids:
                groups.setdefault((path, ids), []).append(hunk)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[0][1]), kv[0][0], kv[1][0].new_start))
    causes = tuple(Cause(file=path, hunks=tuple(hunks), cases=ids) for (path, ids), hunks in ordered)
    by_case = {c.id: tuple(i for i, cause in enumerate(causes) if c.id in cause.cases) for c in cases}
    unexplained = tuple(sorted(c.id for c in cases if not by_case[c.id]))
    return Linked(causes=causes, unexplained=unexplained, by_case=by_case)


def uncited_files(changed: Sequence[str], used: Iterable[str], *, roots: Sequence[str]) -> tuple[str, ...]:
    """The changed files (repository paths) that no `used` span names, whatever its lines, in diff order: what a
    pull request changed that no answer cites ("the change also touched `agent/answers.json`, which no answer
    cites"). A `used` path may be relative to any of `roots` or to the repository root."""
    known = set(changed)
    cited: set[str] = set()
    for ref in used:
        span = parse_span(ref)
        name = span.file if span else str(ref).strip()
        if name:
            cited.add(repo_path(name, roots, known))
    return tuple(dict.fromkeys(f for f in changed if f not in cited))


def explain_comparison(
    comparison: Comparison,
    diff: Sequence[FileDiff],
    *,
    roots: Sequence[str] = (),
    gold: dict[str, tuple[str, ...]] | None = None,
) -> Comparison:
    """`comparison` with its regressions linked to the diff's changed lines, and each case's gold SQL when
    `gold` ({case id: alternatives}) is given. `roots` are the folders (relative to the repository root) that
    `used` paths are relative to; the suite folder, found from the head's meta and the case sources, is tried
    after them."""
    found = suite_folder(comparison.head.suite_path, (c.source for c in comparison.cases))
    folders = [*roots, *([found] if found not in roots else [])]
    regressed = [Regressed(c.id, c.head_used, c.base_used) for c in comparison.judged_as("regressed")]
    linked = link_causes(regressed, diff, roots=folders)
    used = (u for c in comparison.cases for u in (*c.head_used, *c.base_used))
    cases = comparison.cases
    if gold:
        cases = tuple(c.model_copy(update={"gold_sql": gold.get(c.id, c.gold_sql)}) for c in cases)
    return comparison.model_copy(
        update={
            "linked": True,
            "changed_files": tuple(f.path for f in diff),
            "causes": linked.causes,
            "unexplained": linked.unexplained,
            "uncited_files": uncited_files(tuple(f.path for f in diff), used, roots=folders),
            "cases": cases,
        }
    )
