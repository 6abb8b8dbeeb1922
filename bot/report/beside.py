"""The runs a comparison was made from, found beside its file: `check` writes base.json and head.json next to
comparison.json, so `sqlcanary report comparison.json --format html` shows the runs' latency as `check`'s own
report.html does. A file is used only when it is the very run the comparison names (same suite hash, commit and
start time); anything else is ignored, never guessed."""

from __future__ import annotations

from pathlib import Path

from bot.base.errors import SqlcanaryError
from bot.base.results import RunMeta, RunResult, read_run
from bot.compare.comparison import Comparison

BASE_NAME = "base.json"
HEAD_NAME = "head.json"


def _same(a: RunMeta, b: RunMeta) -> bool:
    return (a.suite_hash, a.git_sha, a.started_at, a.shard) == (
        b.suite_hash,
        b.git_sha,
        b.started_at,
        b.shard,
    )


def _run(path: Path, meta: RunMeta | None) -> RunResult | None:
    if meta is None or not path.is_file():
        return None
    try:
        run = read_run(path)
    except SqlcanaryError:
        return None
    return run if _same(run.meta, meta) else None


def runs_beside(
    comparison_file: str | Path, comparison: Comparison
) -> tuple[RunResult | None, RunResult | None]:
    """(base, head): the runs in the comparison file's folder that `comparison` was made from, else None each."""
    folder = Path(comparison_file).resolve().parent
    return _run(folder / BASE_NAME, comparison.base), _run(folder / HEAD_NAME, comparison.head)
