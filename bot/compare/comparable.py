"""Can two runs be compared at all? Pure checks on their meta, used by bot.compare.comparison.

A comparison judges the change between two commits, so everything else must be held still. What makes the runs
`incomparable` (exit 2 unless `--force`), because a verdict would then reflect the setup and not the change:

- a different suite name: runs of different benchmarks;
- a database both runs use, with a different fixture fingerprint: the data changed, so gold answers may differ.
  A database only one run uses is fine (a pull request may add a suite database, or stop using one), but two
  runs with fixtures and no database in common hold different data altogether;
- a different case selection: `--tags` / `--id` filters (meta.filters) or `--shard`. A subset against the
  whole suite would call every case it left out "removed", or hide them;
- a different preset, evaluator version, `--perturb` or RunResult schema version: answers judged by different
  rules;
- a run whose agent answered no case at all (every case a timeout, a crash or no answer): nothing to judge.

What only gets a warning, because the verdict still means the same thing: a different number of repeats (the
common attempts are paired), another PostgreSQL major version, an incomplete run (the cases it did not reach
are removed cases, and the gate judges those).
"""

from __future__ import annotations

from typing import Any

from bot.base.results import RunMeta, RunResult

_IDS_SHOWN = 5


def incomparable_reasons(base: RunResult, head: RunResult) -> list[str]:
    """Why two runs cannot be compared, naming what differs; empty when they can."""
    b, h = base.meta, head.meta
    reasons = []
    if base.schema_version != head.schema_version:
        reasons.append(
            f"RunResult schema version {base.schema_version} in base, {head.schema_version} in head: "
            "written by different sqlcanary versions"
        )
    if b.suite != h.suite:
        reasons.append(f"suite `{b.suite}` in base, `{h.suite}` in head: runs of different suites")
    reasons += _fixture_reasons(b, h)
    if selection(b) != selection(h):
        reasons.append(
            f"case selection: base ran {describe_selection(b)}, head {describe_selection(h)}: "
            "the runs hold different cases of the suite"
        )
    if b.evaluator_version != h.evaluator_version:
        reasons.append(
            f"evaluator version {b.evaluator_version} in base, {h.evaluator_version} in head: "
            "the scoring rules changed, so a verdict may differ without any change in the answer"
        )
    if b.preset != h.preset:
        reasons.append(
            f"preset `{b.preset}` in base, `{h.preset}` in head: answers were judged by different rules"
        )
    reasons += unanswered_reasons(base, "base") + unanswered_reasons(head, "head")
    if (b.perturb or 0) != (h.perturb or 0):
        reasons.append(
            f"perturbed copies: {b.perturb or 0} in base, {h.perturb or 0} in head (`--perturb`): a pass on more "
            "copies is a stricter verdict"
        )
    return reasons


def unanswered_reasons(run: RunResult, side: str) -> list[str]:
    """Why `run` judges nothing: its agent gave no answer at all (every case an agent error: a timeout, a crash,
    output that is no answer). A verdict needs answers: such a run is compared with nothing, so a head that
    hangs or crashes on every case, or a starved base, is never a pass."""
    errors = [c.error_class or "" for c in run.cases]
    if not errors or not all(c.status == "errored" for c in run.cases):
        return []
    if not all(e.startswith("agent_") for e in errors):
        return []
    kinds = ", ".join(f"{kind} {errors.count(kind)}" for kind in sorted(set(errors)))
    return [
        f"the {side} run's agent answered none of its {len(errors)} case(s) ({kinds}): nothing was evaluated"
    ]


def _fixture_reasons(b: RunMeta, h: RunMeta) -> list[str]:
    shared = sorted(b.fixtures.keys() & h.fixtures.keys())
    if b.fixtures and h.fixtures and not shared:
        return [
            f"no database in common (base: {', '.join(sorted(b.fixtures))}; head: {', '.join(sorted(h.fixtures))}): "
            "the runs use different data"
        ]
    return [
        f"database `{db}`: fixture fingerprint {b.fixtures[db]} in base, {h.fixtures[db]} in head: "
        "the data changed, so gold answers may differ"
        for db in shared
        if b.fixtures[db] != h.fixtures[db]
    ]


def selection(meta: RunMeta) -> tuple[tuple[str, Any], ...]:
    """The cases a run was asked for: its filters (order-insensitive) and its shard."""
    filters = {
        k: tuple(sorted(map(str, v))) if isinstance(v, list | tuple) else v for k, v in meta.filters.items()
    }
    return (*sorted((k, v) for k, v in filters.items() if v), ("shard", meta.shard))


def describe_selection(meta: RunMeta) -> str:
    """`the whole suite`, `--tags ads`, `--id a --id b`, `shard 1/3`, or a combination."""
    parts = []
    for key, value in sorted(meta.filters.items()):
        if not value:
            continue
        values = [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
        if key == "tags":
            parts.append(f"--tags {','.join(values)}")
        elif key == "ids":
            more = f" and {len(values) - _IDS_SHOWN} more" if len(values) > _IDS_SHOWN else ""
            parts.append(" ".join(f"--id {v}" for v in values[:_IDS_SHOWN]) + more)
        else:
            parts.append(f"{key}={','.join(values)}")
    if meta.shard:
        parts.append(f"shard {meta.shard}")
    return " ".join(parts) if parts else "the whole suite"


def run_warnings(base: RunResult, head: RunResult) -> list[str]:
    """Differences worth a line in a report that do not change the judgement."""
    warnings = []
    if not base.meta.complete:
        warnings.append("the base run is incomplete: cases it did not reach count as new")
    if not head.meta.complete:
        warnings.append("the head run is incomplete: cases it did not reach count as removed")
    b, h = base.meta, head.meta
    if b.repeats != h.repeats:
        warnings.append(
            f"base repeated each case {b.repeats} time(s), head {h.repeats}: "
            f"only the first {min(b.repeats, h.repeats)} attempt(s) are paired"
        )
    major = (b.server_version.split(".")[0], h.server_version.split(".")[0])
    if all(major) and major[0] != major[1]:
        warnings.append(f"PostgreSQL {b.server_version} in base, {h.server_version} in head")
    return warnings
