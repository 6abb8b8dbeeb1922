"""What the pull request did to the KB lines a regressed case used, in the shape an edit must take to undo or
correct it. A small model copies what it is shown: given a diff's `-` lines it searches for them (they are no
longer in the file), and given one changed line of two that swapped values it edits that one (adding a cast)
and leaves the other. So each linked hunk becomes a hint:

- removed lines (a pure deletion): the base's lines as the text to insert, and a `search` that exists now: the
  head line they followed (or preceded, at the top of the file), with an edit that puts them back after it;
- several lines changed together: every line as it is now and as it was, one `search` holding all of them, and,
  when the lines traded values (the same words, moved), that they swapped, with the base's lines as the
  replacement (the values moved back);
- one changed line: nothing beyond the diff (the reply example already uses it).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from bot.compare.diff import Hunk
from bot.kb.files import KBFiles, RefusedPath
from bot.repair.actions import example

Kind = Literal["removed", "block", "line", "added"]
_WORDS = re.compile(r"\w+")


@dataclass(frozen=True)
class ChangeHint:
    file: str  # as the prompt names KB files
    kind: Kind
    base: tuple[str, ...]  # the lines as they were on the base (the diff's `-` lines)
    head: tuple[str, ...]  # the lines as they are now (`+`)
    anchor: tuple[int, str] | None = None  # removed: the head line (number, text) the lines go next to
    after: bool = True  # removed: they go after the anchor (False: before it, at the top of the file)
    swapped: bool = False  # block: the lines traded values (the same words, moved between lines)
    example: str = ""  # an action of the right shape, built from the file's real lines


def _sides(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    lines = text.splitlines()
    return (
        tuple(ln[1:] for ln in lines if ln.startswith("-")),
        tuple(ln[1:] for ln in lines if ln.startswith("+")),
    )


def _swapped(base: Sequence[str], head: Sequence[str]) -> bool:
    """Two or more lines whose words are the same multiset on both sides, but not line for line."""
    if len(base) < 2 or len(base) != len(head) or list(base) == list(head):
        return False
    words = lambda lines: Counter(w for ln in lines for w in _WORDS.findall(ln))  # noqa: E731
    return words(base) == words(head) and sorted(base) != sorted(head)


def hint(file: str, hunk: Hunk, text: str) -> ChangeHint | None:
    """The hint for one hunk of `file`, whose text is now `text`; None when there is nothing to say."""
    base, head = _sides(hunk.text)
    lines = text.splitlines()
    if base and not head and not hunk.new_count:
        after = hunk.new_start >= 1
        n = hunk.new_start if after else 1
        if not 1 <= n <= len(lines) or text.count(lines[n - 1]) != 1:
            return ChangeHint(file, "removed", base, head)
        anchor = lines[n - 1]
        block = "\n".join(base)
        replace = f"{anchor}\n{block}" if after else f"{block}\n{anchor}"
        return ChangeHint(
            file,
            "removed",
            base,
            head,
            anchor=(n, anchor),
            after=after,
            example=example(file, search=anchor, replace=replace),
        )
    if len(head) > 1 and len(base) > 1:
        block, swapped = "\n".join(head), _swapped(base, head)
        # A swap is undone by moving the values back: the base's lines are the replacement to show. (A model
        # given a placeholder copies the search into it, re-indented, and sends that six times.)
        replace = "\n".join(base) if swapped else "<the corrected lines>"
        shown = example(file, search=block, replace=replace) if text.count(block) == 1 else ""
        return ChangeHint(file, "block", base, head, swapped=swapped, example=shown)
    if head and not base:
        return ChangeHint(file, "added", base, head)
    return None


def change_hints(
    causes: Sequence[tuple[str, Sequence[Hunk]]], read: Callable[[str], tuple[str, str] | None]
) -> tuple[ChangeHint, ...]:
    """The hints of the linked causes' hunks. `read(repository path)` gives (the file's KB name, its text now),
    or None when it cannot be shown."""
    out: list[ChangeHint] = []
    for path, hunks in causes:
        found = read(path)
        if found is None:
            continue
        rel, text = found
        out += [h for h in (hint(rel, hunk, text) for hunk in hunks) if h is not None]
    return tuple(out)


def kb_text(kb: KBFiles, path: str) -> tuple[str, str] | None:
    """(KB name, text now) of a repository path: the path itself, else with its leading folders dropped (a
    suite in a subfolder: `benchmarks/shop/kb/x.yaml` is the KB's `kb/x.yaml`)."""
    parts = path.split("/")
    for i in range(len(parts)):
        try:
            text = kb.read("/".join(parts[i:]))
            if text is not None:
                return kb.relative("/".join(parts[i:])), text
        except (RefusedPath, OSError, UnicodeDecodeError, ValueError):
            continue
    return None


def changed_ranges(
    kb: KBFiles, causes: Sequence[tuple[str, Sequence[Hunk]]], shown: set[str], *, room: int
) -> list[tuple[str, tuple[tuple[int, int], ...], str]]:
    """(KB name, head line ranges of the hunks, text now) of each changed file not in `shown`, at most `room`."""
    out: list[tuple[str, tuple[tuple[int, int], ...], str]] = []
    for path, hunks in causes:
        found = kb_text(kb, path)
        if found is None or found[0] in shown or any(f == found[0] for f, _, _ in out) or len(out) >= room:
            continue
        rel, text = found
        last = max(len(text.splitlines()), 1)
        ranges = sorted(
            {
                (min(max(h.new_start, 1), last), min(max(h.new_start + max(h.new_count, 1) - 1, 1), last))
                for h in hunks
            }
        )
        out.append((rel, tuple(ranges), text))
    return out
