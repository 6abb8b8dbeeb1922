"""The KB spans an answer says it used (`Prediction.used`, "kb/metrics/dau.yaml:1-14", relative to the suite or
config folder) matched to the diff's changed lines: a head span against a hunk's new lines, a base span against
its old lines."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from bot.compare.diff import FileDiff, Hunk

_SPAN = re.compile(r"^(?P<path>.+?):(?P<first>\d+)(?:-(?P<last>\d+))?$")


@dataclass(frozen=True)
class Span:
    file: str
    first: int
    last: int


def parse_span(ref: str) -> Span | None:
    """ "kb/metrics/gmv.yaml:3-12" -> Span; a ref without valid lines -> None."""
    m = _SPAN.match(str(ref).strip())
    if not m:
        return None
    first, last = int(m["first"]), int(m["last"] or m["first"])
    if first < 1 or last < first:
        return None
    return Span(m["path"], first, last)


def _norm(path: str) -> str:
    parts = [p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in ("", ".")]
    out: list[str] = []
    for p in parts:
        if p == ".." and out:
            out.pop()
        else:
            out.append(p)
    return "/".join(out)


def suite_folder(suite_path: str, sources: Iterable[str | None]) -> str:
    """The suite's folder relative to the repository root: the longest tail of `suite_path` (which may be absolute,
    or inside a temporary worktree) that every case source (repository-root relative "path:line") starts with."""
    parts = PurePosixPath(suite_path.replace("\\", "/")).parts
    files = [s.rpartition(":")[0] for s in sources if s]
    if not files or not parts:
        return ""
    for i in range(len(parts)):
        tail = "/".join(p for p in parts[i:] if p != "/")
        if tail and all(f.startswith(tail + "/") for f in files):
            return tail
    return ""


def repo_path(ref_path: str, roots: Sequence[str], known: set[str]) -> str:
    """A `used` path as a repository path: the first root under which it names a changed file (`known`), else
    under the first root."""
    candidates = [_norm(f"{r}/{ref_path}" if r else ref_path) for r in (*roots, "")]
    return next((c for c in candidates if c in known), candidates[0])


def _touches(span: Span, start: int, count: int) -> bool:
    """Whether span overlaps `count` lines from `start`; with count 0 (nothing on this side), whether the change
    happened inside the span (between two of its lines)."""
    if count == 0:
        return span.first <= start < span.last
    return span.first <= start + count - 1 and start <= span.last


def changed_spans(
    used: Sequence[str], side: Literal["head", "base"], files: dict[str, FileDiff], roots: Sequence[str]
) -> list[tuple[str, Hunk]]:
    """The (file, hunk) pairs that `used` spans of one side overlap."""
    by_path = {(f.old_path or f.path) if side == "base" else f.path: f for f in files.values()}
    out = []
    for ref in used:
        span = parse_span(ref)
        if span is None:
            continue
        path = repo_path(span.file, roots, set(by_path))
        diff = by_path.get(path)
        if diff is None:
            continue
        for hunk in diff.hunks:
            start, count = (
                (hunk.new_start, hunk.new_count) if side == "head" else (hunk.old_start, hunk.old_count)
            )
            if _touches(span, start, count) and (diff.path, hunk) not in out:
                out.append((diff.path, hunk))
    return out
