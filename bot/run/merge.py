"""`sqlcanary merge RUN... --out FILE`: the RunResults of `run --shard I/N` jobs (bot.cases.selection picks a
shard's cases) joined into the one the unsharded run would have written (timings aside)."""

from __future__ import annotations

from pathlib import PurePosixPath

from bot.base.errors import ConfigError, ResultFileError
from bot.base.results import CaseResult, LLMUsage, RunMeta, RunResult, summarize
from bot.cases.selection import parse_shard

# Fields every shard must share: runs that differ in one of them do not add up to one run.
SAME_FIELDS = (
    "suite_hash",
    "evaluator_version",
    "preset",
    "agent",
    "agent_fingerprint",
    "kb_fingerprint",
    "repeats",
    "filters",
    "setting",  # a sweep leg's: shards of two settings are two runs
)


def _suite_relative(file: str, suite_path: str) -> tuple[str, ...]:
    """A case file's path below the suite folder, whether the run recorded it absolute or relative."""
    parts = PurePosixPath(file).parts
    root = PurePosixPath(suite_path)
    root_parts = root.parent.parts if root.suffix in (".yml", ".yaml") else root.parts
    for k in range(len(root_parts), 0, -1):
        if parts[:k] == root_parts[-k:]:
            return parts[k:]
    return parts


def suite_order(case: CaseResult, suite_path: str) -> tuple:
    """Where the loader puts a case: cases inline in the suite file first, then case files in path order,
    then by line."""
    if not case.source:
        return (2, (), 0, case.id)
    file, _, line = case.source.rpartition(":")
    rel = _suite_relative(file, suite_path)
    rank = 1 if len(rel) > 1 and rel[0] == "cases" else 0
    return (rank, rel, int(line) if line.isdigit() else 0, case.id)


def _check_same(runs: list[tuple[str, RunResult]]) -> None:
    first_path, first = runs[0]
    for path, run in runs[1:]:
        for name in SAME_FIELDS:
            mine, theirs = getattr(first.meta, name), getattr(run.meta, name)
            if mine != theirs:
                raise ResultFileError(
                    f"cannot merge: {name} differs ({first_path} has {mine!r}, this run {theirs!r}); "
                    "shards must come from the same suite, agent, KB and settings",
                    path=path,
                )
    fixtures: dict[str, tuple[str, str]] = {}
    for path, run in runs:
        for db, fp in run.meta.fixtures.items():
            seen = fixtures.setdefault(db, (fp, path))
            if seen[0] != fp:
                raise ResultFileError(
                    f"cannot merge: fixture {db!r} differs ({seen[1]} has {seen[0]}, this run {fp})",
                    path=path,
                )


def _check_shards(runs: list[tuple[str, RunResult]], *, partial: bool) -> None:
    shards: dict[int, str] = {}
    count = None
    for path, run in runs:
        if run.meta.shard is None:
            raise ResultFileError(
                "cannot merge: this run is not a shard (it was made without --shard)", path=path
            )
        shard = parse_shard(run.meta.shard)
        if count not in (None, shard.count):
            raise ResultFileError(
                f"cannot merge: shard {shard} of {shard.count}, the others of {count}", path=path
            )
        count = shard.count
        if shard.index in shards:
            raise ResultFileError(f"cannot merge: shard {shard} is also in {shards[shard.index]}", path=path)
        shards[shard.index] = path
    missing = [str(i) for i in range(1, (count or 0) + 1) if i not in shards]
    if missing and not partial:
        raise ConfigError(
            f"cannot merge: shard(s) {', '.join(missing)} of {count} are missing (--partial merges anyway)"
        )


def merge_runs(runs: list[tuple[str, RunResult]], *, partial: bool = False) -> RunResult:
    """Join shard runs (path, run) into one RunResult; ResultFileError / ConfigError (exit 2) when they do
    not belong together. `duration_s` is the longest shard's: shards run side by side."""
    if not runs:
        raise ConfigError("nothing to merge: give the shard RunResult files")
    _check_same(runs)
    _check_shards(runs, partial=partial)
    owner: dict[str, str] = {}
    cases: list[CaseResult] = []
    for path, run in runs:
        for case in run.cases:
            if case.id in owner:
                raise ResultFileError(
                    f"cannot merge: case {case.id!r} is also in {owner[case.id]}", path=path
                )
            owner[case.id] = path
            cases.append(case)
    metas = [run.meta for _, run in runs]
    suite_path = metas[0].suite_path
    cases.sort(key=lambda c: suite_order(c, suite_path))
    return RunResult(meta=_merged_meta(metas, partial=partial), summary=summarize(cases), cases=tuple(cases))


def sum_usage(usages: list[LLMUsage | None]) -> LLMUsage | None:
    """The shards' LLM usage added up; the cost is unknown (None) when one shard's is."""
    present = [u for u in usages if u is not None]
    if not present:
        return None
    costs = [u.cost_usd for u in present]
    return LLMUsage(
        model=present[0].model,
        calls=sum(u.calls for u in present),
        cached_calls=sum(u.cached_calls for u in present),
        prompt_tokens=sum(u.prompt_tokens for u in present),
        completion_tokens=sum(u.completion_tokens for u in present),
        cost_usd=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
        parse_ok=sum(u.parse_ok for u in present),
        parse_repaired=sum(u.parse_repaired for u in present),
        parse_failed=sum(u.parse_failed for u in present),
    )


def _merged_meta(metas: list[RunMeta], *, partial: bool) -> RunMeta:
    shas = {m.git_sha for m in metas}
    fixtures: dict[str, str] = {}
    for m in metas:
        fixtures.update(m.fixtures)
    started = sorted(m.started_at for m in metas if m.started_at)
    return metas[0].model_copy(
        update={
            "shard": None,
            "fixtures": dict(sorted(fixtures.items())),
            "git_sha": shas.pop() if len(shas) == 1 else None,
            "started_at": started[0] if started else "",
            "duration_s": max(m.duration_s for m in metas),
            "jobs": max(m.jobs for m in metas),
            "complete": all(m.complete for m in metas) and not partial,
            "agent_calls": sum(m.agent_calls for m in metas),
            "cache_hits": sum(m.cache_hits for m in metas),
            "llm": sum_usage([m.llm for m in metas]),
            "llm_judge": sum_usage([m.llm_judge for m in metas]),
        }
    )
