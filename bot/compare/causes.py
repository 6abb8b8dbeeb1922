"""Cause linking: which lines of the pull request's diff each regressed case's answer drew on. Pure.

An answer lists the KB spans it used (`Prediction.used`, "kb/metrics/dau.yaml:1-14", relative to the suite or
config folder). A regressed case is *explained* by a diff hunk when one of its spans overlaps the lines the hunk
changed: a head span is compared with the hunk's new line range, a base span with its old range (a span deleted
at the head shows only in the base's `used`). Cases sharing the same changed lines of a file form one cause:
"`kb/metrics/dau.yaml` lines 9-10 (changed here) → 15 regressed". A regressed case none of whose spans the diff
touched is "not explained by this diff": the agent or the model changed, or the case is flaky.

The diff is `git diff --unified=0` between the two trees that were evaluated (bot.commands.trees.pr_diff), so
that its line numbers are the ones the runs' spans were written against.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

from bot.base.results import FrozenModel

if TYPE_CHECKING:  # compare imports this module's models; the function below only reads a Comparison
    from bot.compare.comparison import Comparison

MAX_HUNK_LINES = 24  # diff lines kept per hunk (what the reports and the repair prompt show)
MAX_HUNK_CHARS = 2000
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_SPAN = re.compile(r"^(?P<path>.+?):(?P<first>\d+)(?:-(?P<last>\d+))?$")
NOT_EXPLAINED = (
    "not explained by this diff: no KB line these answers used was changed (an agent or model change, or "
    "flakiness)"
)


class Hunk(FrozenModel):
    """One changed region: `count` 0 on a side means nothing there (a pure insertion or deletion), and the
    start is then the line after which it happened, as git writes it."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    text: str = ""  # the hunk's -/+ lines, capped (MAX_HUNK_LINES, MAX_HUNK_CHARS)

    @property
    def lines(self) -> tuple[Literal["head", "base"], int, int]:
        """The changed lines as a reader finds them: in the head file, or (a pure deletion) in the base file."""
        if self.new_count:
            return "head", self.new_start, self.new_start + self.new_count - 1
        return "base", self.old_start, self.old_start + max(self.old_count, 1) - 1


class FileDiff(FrozenModel):
    path: str  # relative to the repository root: the head's path (the base's, for a deleted file)
    old_path: str | None = None  # the base's path, when it differs (a file added: None)
    hunks: tuple[Hunk, ...] = ()


class Cause(FrozenModel):
    """Changed lines of one file and the regressed cases whose answers used them."""

    file: str  # relative to the repository root
    hunks: tuple[Hunk, ...]
    cases: tuple[str, ...]

    @property
    def where(self) -> str:
        """ "lines 9–10", "line 3", "lines 3, 10–11 (removed)": head line numbers; removed lines by the base's."""
        parts = []
        for h in self.hunks:
            side, first, last = h.lines
            text = str(first) if first == last else f"{first}–{last}"
            parts.append(text + (" (removed)" if side == "base" else ""))
        plural = len(self.hunks) > 1 or any(h.lines[1] != h.lines[2] for h in self.hunks)
        return ("lines " if plural else "line ") + ", ".join(parts)

    @property
    def diff(self) -> str:
        return "\n".join(h.text for h in self.hunks if h.text)


@dataclass(frozen=True)
class Span:
    file: str
    first: int
    last: int


# ---------------------------------------------------------------------------------------------------------------
# the diff


def _unquote(path: str) -> str:
    if path.startswith('"') and path.endswith('"'):
        raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        return raw.encode("latin-1", "replace").decode("utf-8", "replace")
    return path


def _strip(path: str) -> str | None:
    path = _unquote(path.strip().split("\t")[0])
    if path == "/dev/null":
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


def _cap(lines: list[str]) -> str:
    kept = lines[:MAX_HUNK_LINES]
    text = "\n".join(kept)
    if len(text) > MAX_HUNK_CHARS:
        text = text[:MAX_HUNK_CHARS].rsplit("\n", 1)[0]
    if len(kept) < len(lines) or len(text) < len("\n".join(kept)):
        text += "\n… (cut)"
    return text


def parse_diff(text: str) -> tuple[FileDiff, ...]:
    """The files and hunks of `git diff --unified=0 --no-renames` output; binary files have no hunks."""
    files: list[FileDiff] = []
    old: str | None = None
    new: str | None = None
    hunks: list[Hunk] = []
    body: list[str] = []
    head: tuple[int, int, int, int] | None = None

    def close_hunk() -> None:
        nonlocal head, body
        if head is not None:
            hunks.append(
                Hunk(
                    old_start=head[0],
                    old_count=head[1],
                    new_start=head[2],
                    new_count=head[3],
                    text=_cap(body),
                )
            )
        head, body = None, []

    def close_file() -> None:
        nonlocal hunks, old, new
        close_hunk()
        path = new or old
        if path:
            files.append(FileDiff(path=path, old_path=old if old != path else None, hunks=tuple(hunks)))
        hunks, old, new = [], None, None

    for line in text.splitlines():
        if line.startswith("diff --git "):
            close_file()
        elif head is None and line.startswith("--- "):
            old = _strip(line[4:])
        elif head is None and line.startswith("+++ "):
            new = _strip(line[4:])
        elif m := _HUNK.match(line):
            close_hunk()
            head = (
                int(m[1]),
                int(m[2] if m[2] is not None else 1),
                int(m[3]),
                int(m[4] if m[4] is not None else 1),
            )
        elif head is not None and line[:1] in ("-", "+", "\\"):
            body.append(line)
    close_file()
    return tuple(files)


def added_file(path: str, text: str) -> FileDiff:
    """An untracked file of the working tree, as the diff of a new file (every line added)."""
    lines = text.splitlines()
    return FileDiff(
        path=path,
        hunks=(
            Hunk(
                old_start=0,
                old_count=0,
                new_start=1,
                new_count=len(lines),
                text=_cap([f"+{x}" for x in lines]),
            ),
        )
        if lines
        else (),
    )


# ---------------------------------------------------------------------------------------------------------------
# spans


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
    cases = comparison.cases
    if gold:
        cases = tuple(c.model_copy(update={"gold_sql": gold.get(c.id, c.gold_sql)}) for c in cases)
    return comparison.model_copy(
        update={
            "linked": True,
            "changed_files": tuple(f.path for f in diff),
            "causes": linked.causes,
            "unexplained": linked.unexplained,
            "cases": cases,
        }
    )
