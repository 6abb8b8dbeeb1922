"""A pull request's KB edits as its smallest independent line changes, and the KB texts with any of them reverted.

The diff (bot.compare.causes.FileDiff, `git diff --unified=0` between the two evaluated trees) gives each hunk's line
ranges; the base and head texts give its lines, whole (a FileDiff keeps only a capped excerpt). A hunk is split
into changes: runs of unchanged lines inside it (a diff with context) separate changes, and within one run of
removed and added lines every removed line that an added line replaces is a change of its own (two neighbouring
lines edited are two changes), so a hunk that fixes one case and breaks another through a different line can
be reverted in part. `ChangeSet.texts(reverted)` is every changed KB file as the head has it but for the
reverted changes, which get the base's lines back.

Only KB files count: those the config's `kb.paths` match and the repair loop may write (bot.kb.files).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bot.base.results import FrozenModel
from bot.compare.diff import MAX_HUNK_CHARS, FileDiff, Hunk
from bot.config.model import Config
from bot.kb.files import MAX_FILE_BYTES, KBFiles

SIMILAR = 0.5  # two lines this alike (difflib ratio) are one line edited, not one removed and another added


class Change(FrozenModel):
    """One contiguous run of removed and added lines of one file. Lines keep their line ends.

    `old_start`/`new_start` are 1-based; with no line on a side (a pure insertion or deletion) the start is the
    line after which it happened, as git writes it."""

    id: int
    file: str  # relative to the repository root
    old_start: int
    old_lines: tuple[str, ...]
    new_start: int
    new_lines: tuple[str, ...]

    @property
    def head_slice(self) -> tuple[int, int]:
        """The 0-based slice of the head file's lines this change wrote (empty for a pure deletion)."""
        lo = self.new_start - 1 if self.new_lines else self.new_start
        return lo, lo + len(self.new_lines)

    @property
    def where(self) -> str:
        """ "line 9", "lines 9–10" (head numbers), "line 4 (removed)" (a pure deletion: the base's numbers)."""
        if self.new_lines:
            first, n, suffix = self.new_start, len(self.new_lines), ""
        else:
            first, n, suffix = self.old_start, len(self.old_lines), " (removed)"
        last = first + n - 1
        return (f"line {first}" if n == 1 else f"lines {first}–{last}") + suffix

    @property
    def text(self) -> str:
        """The change as diff lines (-old, +new), capped like a cause's hunk."""
        lines = [f"-{x.rstrip(chr(10)).rstrip(chr(13))}" for x in self.old_lines]
        lines += [f"+{x.rstrip(chr(10)).rstrip(chr(13))}" for x in self.new_lines]
        text = "\n".join(lines)
        return text if len(text) <= MAX_HUNK_CHARS else text[:MAX_HUNK_CHARS].rsplit("\n", 1)[0] + "\n… (cut)"

    def describe(self) -> str:
        return f"{self.file} {self.where}"


@dataclass(frozen=True)
class ChangeSet:
    """The changes of the KB files a pull request edited, with both sides' texts (None: no such file)."""

    changes: tuple[Change, ...]
    base: Mapping[str, str | None]
    head: Mapping[str, str | None]
    skipped: tuple[
        str, ...
    ] = ()  # "path: why" for changed KB files left out (binary, too large, diff mismatch)
    _by_file: dict[str, list[Change]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for c in self.changes:
            self._by_file.setdefault(c.file, []).append(c)

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(c.id for c in self.changes)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(self._by_file)

    def change(self, change_id: int) -> Change:
        return self.changes[change_id]

    def texts(self, reverted: Collection[int]) -> dict[str, str | None]:
        """{path: text, None when the file is absent} of every changed file, with the `reverted` changes undone."""
        out: dict[str, str | None] = {}
        for path, changes in self._by_file.items():
            undo = [c for c in changes if c.id in reverted]
            head = self.head.get(path)
            if not undo:
                out[path] = head
            elif len(undo) == len(changes) and self.base.get(path) is None:
                out[path] = None  # the pull request added the file: reverting all of it removes it
            else:
                out[path] = "".join(_revert(_lines(head), undo))
        return out


def _lines(text: str | None) -> list[str]:
    return (text or "").splitlines(keepends=True)


def _revert(head: list[str], undo: Sequence[Change]) -> list[str]:
    """`head` with each change of `undo` (one file's, in the file's order) given its base lines back."""
    out: list[str] = []
    pos = 0
    for c in sorted(undo, key=lambda c: (c.head_slice, c.id)):
        lo, hi = c.head_slice
        out += head[pos:lo]
        out += c.old_lines
        pos = hi
    return out + head[pos:]


# ---------------------------------------------------------------------------------------------------------------
# splitting


def _pairs(old: Sequence[str], new: Sequence[str]) -> Iterator[tuple[int, int, int, int]]:
    """One run of removed lines `old` and added lines `new` as its smallest changes: (i1, i2, j1, j2) slices.
    As many lines on both sides: line for line. Otherwise a removed line pairs with the next alike added line,
    and what lies between two pairs is one change."""
    if len(old) == len(new):
        for k in range(len(old)):
            yield k, k + 1, k, k + 1
        return
    matched: list[tuple[int, int]] = []
    j = 0
    for i, line in enumerate(old):
        for k in range(j, len(new)):
            if difflib.SequenceMatcher(a=line, b=new[k], autojunk=False).ratio() >= SIMILAR:
                matched.append((i, k))
                j = k + 1
                break
    i0 = j0 = 0
    for n, (i, k) in enumerate([*matched, (len(old), len(new))]):
        if i - i0 == k - j0:  # what lies between two pairs: line for line again (nothing, often)
            yield from ((i0 + d, i0 + d + 1, j0 + d, j0 + d + 1) for d in range(i - i0))
        else:
            yield i0, i, j0, k
        if n < len(matched):
            yield i, i + 1, k, k + 1
        i0, j0 = i + 1, k + 1


def split_hunk(path: str, hunk: Hunk, base: list[str], head: list[str], first_id: int = 0) -> list[Change]:
    """The changes of one hunk, numbered from `first_id`. ValueError when the hunk's ranges do not fit the texts."""
    old_lo = hunk.old_start - 1 if hunk.old_count else hunk.old_start
    new_lo = hunk.new_start - 1 if hunk.new_count else hunk.new_start
    old = base[old_lo : old_lo + hunk.old_count]
    new = head[new_lo : new_lo + hunk.new_count]
    if len(old) != hunk.old_count or len(new) != hunk.new_count or old_lo < 0 or new_lo < 0:
        raise ValueError(
            f"the diff's hunk @@ -{hunk.old_start},{hunk.old_count} +{hunk.new_start},{hunk.new_count} "
            "@@ does not fit the files"
        )
    out: list[Change] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for a1, a2, b1, b2 in _pairs(old[i1:i2], new[j1:j2]):
            o1, n1 = old_lo + i1 + a1, new_lo + j1 + b1  # 0-based positions in the files
            out.append(
                Change(
                    id=first_id + len(out),
                    file=path,
                    old_start=o1 + 1 if a2 > a1 else o1,
                    old_lines=tuple(old[i1 + a1 : i1 + a2]),
                    new_start=n1 + 1 if b2 > b1 else n1,
                    new_lines=tuple(new[j1 + b1 : j1 + b2]),
                )
            )
    return out


def split_changes(
    diff: Sequence[FileDiff], base: Mapping[str, str | None], head: Mapping[str, str | None]
) -> ChangeSet:
    """Every change of the files of `diff` that `base`/`head` hold texts for ({path: text or None (absent)});
    files missing from both mappings are left out. A file whose hunks do not fit its texts is left out whole
    and named in `skipped`."""
    changes: list[Change] = []
    skipped: list[str] = []
    for f in diff:
        if f.path not in base and f.path not in head:
            continue
        old, new = _lines(base.get(f.path)), _lines(head.get(f.path))
        found: list[Change] = []
        try:
            for hunk in f.hunks:
                found += split_hunk(f.path, hunk, old, new, first_id=len(changes) + len(found))
        except ValueError as exc:
            skipped.append(f"{f.path}: {exc}")
            continue
        if "".join(_revert(new, found)) != "".join(old):
            skipped.append(f"{f.path}: the diff does not turn the base's text into the head's")
            continue
        changes += found
    texts = {c.file for c in changes}
    return ChangeSet(
        changes=tuple(changes),
        base={p: base.get(p) for p in texts},
        head={p: head.get(p) for p in texts},
        skipped=tuple(skipped),
    )


# ---------------------------------------------------------------------------------------------------------------
# the KB files of a diff, read from the two trees


def kb_relative(path: str, config: Config, head_root: Path) -> str | None:
    """A repository path relative to the config's folder when it is a KB file (`kb.paths`, a KB suffix), else None."""
    if not config.kb.paths:
        return None
    folder = Path(config.base_dir).resolve()
    try:
        rel = (head_root.resolve() / path).relative_to(folder).as_posix()
    except ValueError:
        return None
    kb = KBFiles(root=folder, globs=tuple(config.kb.paths))
    return rel if kb.allowed(rel) is None else None


def _read(root: Path, path: str) -> str | None:
    """The text of `root/path`; None when absent; ValueError when it is no text a KB edit could hold."""
    target = root / path
    if target.is_symlink():
        return _refuse("a symlink")
    if not target.is_file():
        return None
    if target.stat().st_size > MAX_FILE_BYTES:
        return _refuse(f"larger than {MAX_FILE_BYTES} bytes")
    try:
        return target.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return _refuse("not UTF-8 text")


def _refuse(why: str) -> str:
    raise ValueError(why)


def kb_changes(diff: Sequence[FileDiff], *, config: Config, base_root: Path, head_root: Path) -> ChangeSet:
    """The changes of the KB files of `diff` (bot.check.diff.pr_diff between the two evaluated trees), their
    texts read from the base and head trees (each tree's root is the repository root of that side)."""
    kb = [f for f in diff if kb_relative(f.path, config, head_root) is not None]
    base: dict[str, str | None] = {}
    head: dict[str, str | None] = {}
    skipped: list[str] = []
    for f in kb:
        try:
            base[f.path], head[f.path] = _read(base_root, f.old_path or f.path), _read(head_root, f.path)
        except ValueError as exc:
            skipped.append(f"{f.path}: {exc}")
            base.pop(f.path, None)
    found = split_changes([f for f in kb if f.path in base], base, head)
    return ChangeSet(
        changes=found.changes, base=found.base, head=found.head, skipped=(*skipped, *found.skipped)
    )
