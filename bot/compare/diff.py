"""The pull request's diff as files and hunks: `git diff --unified=0 --no-renames` output parsed, an untracked
file as the diff of a new file; each hunk's -/+ text capped for the reports and the repair prompt."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Literal

from bot.base.results import FrozenModel

MAX_HUNK_LINES = 24  # diff lines kept per hunk (what the reports and the repair prompt show)


MAX_HUNK_CHARS = 2000


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


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


def unified_diff(before: Mapping[str, str | None], after: Mapping[str, str | None]) -> str:
    """A unified diff (git style a/ b/ names) from {path: text or None (absent)} before to after."""
    chunks: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        lines = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile=f"a/{path}" if old is not None else "/dev/null",
            tofile=f"b/{path}" if new is not None else "/dev/null",
        )
        text = "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
        )
        chunks.append(text)
    return "".join(chunks)
