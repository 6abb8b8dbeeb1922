"""Mode `post`'s merge: the legs of one pull request's check (validated by bot.github.artifact) as one CheckResult.
Not GitHub's business (bot.github reads and checks the artifact; merging runs and the gate are sqlcanary's).

- Every leg must name the pull request and the head commit the trusted event names: an artifact cannot make the
  bot comment on another pull request or attach a check run to another commit.
- One unsharded leg, or the shards `i/N` of one check: the head runs and the base runs are merged by
  bot.run.merge's rules (the same suite, agent, KB and settings; a missing or duplicate shard is an error naming
  it), and compared once with bot.compare, exactly as an unsharded check compares them.
- The gate: each leg resolved it from the base commit's config `gate:` and the action's inputs (`check` judges a
  change by the base's rules) and recorded it in its comparison.json; the legs must agree, and that gate decides.
- What a leg alone could compute (it had the pull request's tree) is carried over: each case's gold SQL, the
  edited cases judged by the base's version, and the regressions linked to the changed KB lines (causes), merged
  across shards as bot.compare.causes groups them (per file, the hunks used by the same regressed cases).
- What is posted is what was written: the merged runs and their comparison are written beside the reports (output
  `results-path`; the artifact to keep), masked of the secrets as they are written (bot.base.resultfiles)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bot.base.errors import ResultFileError
from bot.base.resultfiles import ResultFiles
from bot.base.results import RunResult
from bot.check.pipeline import CheckResult
from bot.compare.comparison import NO_BASELINE, Comparison, compare_head_only, compare_runs
from bot.compare.diff import Cause, Hunk
from bot.github.artifact import Leg
from bot.github.leg_payload import PAYLOAD_FILE
from bot.github.posting import Posting
from bot.run.merge import merge_runs


def _claims(legs: list[Leg], *, pr_number: int, head_sha: str) -> None:
    for leg in legs:
        p, where = leg.payload, leg.where(PAYLOAD_FILE)
        if p.pr_number != pr_number:
            raise ResultFileError(
                f"untrusted artifact refused: it names pull request #{p.pr_number}, this run is for #{pr_number}",
                path=where,
            )
        if p.head_sha != head_sha:
            raise ResultFileError(
                f"untrusted artifact refused: it names commit {p.head_sha[:12]}, this run is for {head_sha[:12]}",
                path=where,
            )


def _merged(legs: list[Leg], side: str) -> RunResult | None:
    runs = [(leg, leg.head if side == "head" else leg.base) for leg in legs]
    present = [
        (leg.where(getattr(leg.payload.files, side) or ""), run) for leg, run in runs if run is not None
    ]
    if not present:
        return None
    if len(present) != len(runs):
        missing = next(leg for leg, run in runs if run is None)
        raise ResultFileError(
            f"untrusted artifact refused: this leg has no {side} run and the others do",
            path=missing.where(PAYLOAD_FILE),
        )
    if len(present) == 1 and present[0][1].meta.shard is None:
        return present[0][1]
    return merge_runs(present)


def _gate(legs: list[Leg]) -> Comparison:
    first = legs[0].comparison
    for leg in legs[1:]:
        if leg.comparison.gate != first.gate:
            raise ResultFileError(
                f"untrusted artifact refused: its gate settings differ from {legs[0].where(leg.payload.files.comparison)}'s",
                path=leg.where(leg.payload.files.comparison),
            )
    return first


def _causes(legs: list[Leg]) -> tuple[Cause, ...]:
    """The legs' causes regrouped: per file, the hunks used by exactly the same regressed cases."""
    used: dict[tuple[str, Hunk], set[str]] = {}
    for leg in legs:
        for cause in leg.comparison.causes:
            for hunk in cause.hunks:
                used.setdefault((cause.file, hunk), set()).update(cause.cases)
    groups: dict[tuple[str, tuple[str, ...]], list[Hunk]] = {}
    for (file, hunk), ids in used.items():
        groups.setdefault((file, tuple(sorted(ids))), []).append(hunk)
    ordered = sorted(
        groups.items(), key=lambda kv: (-len(kv[0][1]), kv[0][0], min(h.new_start for h in kv[1]))
    )
    return tuple(
        Cause(file=file, hunks=tuple(sorted(hunks, key=lambda h: h.new_start)), cases=ids)
        for (file, ids), hunks in ordered
    )


@dataclass(frozen=True)
class _Carried:
    """What the legs computed with the pull request's tree, merged: each case's gold SQL, whether the regressions
    were linked to the change, the changed and uncited files, and the causes."""

    gold: dict[str, tuple[str, ...]]
    linked: bool
    changed_files: tuple[str, ...]
    uncited_files: tuple[str, ...]
    causes: tuple[Cause, ...]


def _carried(legs: list[Leg]) -> _Carried:
    linked = any(leg.comparison.linked for leg in legs)
    # A changed file no answer cites: uncited in every leg (a leg's answers may cite what another's do not).
    uncited = tuple(
        f for f in legs[0].comparison.uncited_files if all(f in leg.comparison.uncited_files for leg in legs)
    )
    return _Carried(
        gold={c.id: c.gold_sql for leg in legs for c in leg.comparison.cases if c.gold_sql},
        linked=linked,
        changed_files=tuple(dict.fromkeys(f for leg in legs for f in leg.comparison.changed_files)),
        uncited_files=uncited,
        causes=_causes(legs) if linked else (),
    )


def combine_legs(legs: list[Leg], *, pr_number: int, head_sha: str, out_dir: Path) -> CheckResult:
    """One CheckResult of the pull request from its legs (see the module's text); ResultFileError / ConfigError
    (exit 2) naming the leg's file when they do not add up to one check of this pull request and commit."""
    _claims(legs, pr_number=pr_number, head_sha=head_sha)
    head, base = _merged(legs, "head"), _merged(legs, "base")
    assert head is not None  # every leg has a head run (LegFiles.head is required)
    first = _gate(legs)
    carried = _carried(legs)
    against = {c.id: c.against_base for leg in legs for c in leg.comparison.cases if c.against_base}
    if base is None:
        comparison = compare_head_only(head, gate=first.gate, reason=first.baseline_reason or NO_BASELINE)
    else:
        comparison = compare_runs(base, head, gate=first.gate, edited_against_base=against)
    # What the legs carry, over what the merged runs alone say.
    regressed = {c.id for c in comparison.judged_as("regressed")}
    explained = {i for cause in carried.causes for i in cause.cases}
    cases = tuple(
        c.model_copy(update={"gold_sql": carried.gold.get(c.id, c.gold_sql)}) for c in comparison.cases
    )
    warnings = (*comparison.warnings, *(w for leg in legs for w in leg.comparison.warnings))
    comparison = comparison.model_copy(
        update={
            "cases": cases,
            "linked": carried.linked,
            "changed_files": carried.changed_files,
            "uncited_files": carried.uncited_files,
            "causes": carried.causes,
            "unexplained": tuple(sorted(regressed - explained)) if carried.linked else (),
            "warnings": tuple(dict.fromkeys(warnings)),
        }
    )
    p = legs[0].payload
    return CheckResult(
        base=base,
        head=head,
        comparison=comparison,
        out_dir=out_dir,
        files=(),
        base_sha=p.base_sha or (base.meta.git_sha if base else None) or "",
        head_sha=head_sha,
    )


def merged_check(posting: Posting, *, out_dir: Path, secrets: Sequence[str]) -> CheckResult:
    """The legs of `posting` as one CheckResult (`combine_legs`), its runs and comparison written to `out_dir`
    (head.json, base.json, comparison.json) masked of `secrets`: the result holds what was written."""
    result = combine_legs(
        posting.legs, pr_number=posting.pr_number, head_sha=posting.head_sha, out_dir=out_dir
    )
    files = ResultFiles(out_dir, secrets)
    head = files.model("head.json", result.head)
    base = None if result.base is None else files.model("base.json", result.base)
    return replace(result, head=head, base=base, comparison=files.model("comparison.json", result.comparison))
