"""One action of a repair plan applied to a file's text, and, when it cannot be, a refusal that says exactly
what to send instead: a small model repeats a mistake it is only told about, and fixes one it is shown.

An action is `{"file", "edits": [{"search", "replace"}]}` (search/replace, each search exactly once) or
`{"file", "content"}` (the whole file, new or replaced). What kind of file it writes follows from the file's
name (a .yaml file is YAML, a .sql file a SQL snippet, a .md file a note); a `type` the model adds is ignored.

How a search text is found (what a small model gets wrong, measured in benchmarks/llm):
- only where it stands on its own: `orders` does not match inside `orders_archive`;
- exactly, or else with its runs of whitespace and line breaks taken as any whitespace (a model flattens
  `filters:\n  - x` into `filters: - x`); either way it must be found once;
- when the search text is not in the file but the replace text is, once, the edit was written the wrong way
  round (the -/+ lines of a diff copied in order): it is applied from the replace text back to the search.
Whatever applies is still only a proposal: it must pass the file's checks, fix the case and break nothing.
Placeholder text copied from an example is refused, never written."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

MAX_EDITS = 20
KINDS = {".yaml": "YAML file", ".yml": "YAML file", ".sql": "SQL snippet", ".md": "note"}
_CLOSE = 0.5  # how alike a line must be to the search text to be offered as the one meant
NEW_TEXT = "<the new text>"
# Text of the examples shown to the model (prompts, refusals): sent back, it is a copy, not an edit.
PLACEHOLDERS = (
    "<exact lines copied from the file>",
    NEW_TEXT,
    "<the whole new",
    "<the corrected line",
    "lines copied exactly from the file",
    "<a KB file",
    "<new text>",
)


class Edit(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")
    search: str
    replace: str


class Action(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")
    file: str
    edits: tuple[Edit, ...] = Field(default=(), max_length=MAX_EDITS)
    content: str | None = None


class Unusable(ValueError):
    """Why an action does not apply, with the corrected action to send (shown to the model)."""


def file_kind(rel: str) -> str:
    return KINDS.get(PurePosixPath(rel).suffix.lower(), "text file")


def example(
    rel: str, *, search: str | None = None, replace: str = "<the new text>", content: bool = False
) -> str:
    """A corrected action as compact JSON, to paste into a refusal."""
    if content:
        return json.dumps({"file": rel, "content": f"<the whole new {file_kind(rel)}>"}, ensure_ascii=False)
    edit = {"search": search or "<exact lines copied from the file>", "replace": replace}
    return json.dumps({"file": rel, "edits": [edit]}, ensure_ascii=False)


def apply_action(action: Action, rel: str, current: str | None) -> str:
    """The file's text after the action; Unusable naming what does not apply and what to send instead."""
    if action.content is not None and action.edits:
        raise Unusable(
            f"send either `edits` or `content`, not both: {example(rel)} changes lines, "
            f"{example(rel, content=True)} writes the whole file"
        )
    hit = _placeholder(action.content or "", action.file)
    if hit:
        raise Unusable(
            f"the action's `file` or `content` is the example's placeholder {hit!r}: name a KB file "
            f"and write its actual text"
        )
    if action.content is not None:
        return action.content
    if not action.edits:
        raise Unusable(
            f"the action has neither `edits` nor `content`; send {example(rel)} to change lines "
            f"or {example(rel, content=True)} to write the whole file"
        )
    if current is None:
        raise Unusable(
            f"{rel} does not exist, so there is nothing to search; to create it send "
            f"{example(rel, content=True)}"
        )
    text = current
    for i, edit in enumerate(action.edits):
        _refuse_placeholders(f"edits[{i}]", rel, text, edit)
        if not edit.search:
            raise Unusable(
                f"edits[{i}]: `search` is empty; copy the lines to change from the file, e.g. "
                f"{example(rel, search=_first_line(text), replace=edit.replace or NEW_TEXT)}"
            )
        spans = find(text, edit.search)
        search, replace = edit.search, edit.replace
        if not spans and edit.replace and edit.replace != edit.search:
            back = find(text, edit.replace)
            if len(back) == 1:  # written the wrong way round: the file has the replace text
                spans, replace = back, edit.search
        if not spans:
            raise Unusable(
                f"edits[{i}]: search text not found in {rel}: {search[:120]!r}. " + _closest(rel, text, edit)
            )
        if len(spans) > 1:
            raise Unusable(
                f"edits[{i}]: search text found {len(spans)} times (must be exactly once) in {rel}: "
                f"{search[:120]!r}. " + _widened(rel, text, edit, spans[0])
            )
        start, end = spans[0]
        text = text[:start] + replace + text[end:]
    return text


def _placeholder(*values: str) -> str | None:
    """The first example placeholder any of `values` holds, if any."""
    return next((p for value in values for p in PLACEHOLDERS if p in value), None)


def _refuse_placeholders(where: str, rel: str, text: str, edit: Edit) -> None:
    for field, value in (("search", edit.search), ("replace", edit.replace)):
        hit = _placeholder(value)
        if hit:
            raise Unusable(
                f"{where}: `{field}` is the example's placeholder {hit!r}, not KB text: write the "
                f"actual lines, e.g. {example(rel, search=_first_line(text))} with your new text "
                f"as `replace`"
            )


_WORD = re.compile(r"\w")


def _bounded(text: str, search: str, start: int, end: int) -> bool:
    """The match does not start or end inside a word (when the search text itself starts or ends with one)."""
    if _WORD.match(search[0]) and start > 0 and _WORD.match(text[start - 1]):
        return False
    return not (_WORD.match(search[-1]) and end < len(text) and _WORD.match(text[end]))


def find(text: str, search: str) -> list[tuple[int, int]]:
    """Where `search` stands in `text` as (start, end) spans: exact matches on word boundaries; when there are
    none, matches with every run of whitespace in the search taken as any run of whitespace."""
    if not search.strip():
        return []
    spans = [(m.start(), m.start() + len(search)) for m in re.finditer(re.escape(search), text)]
    spans = [(a, b) for a, b in spans if _bounded(text, search, a, b)]
    if spans:
        return spans
    core = search.strip()
    pattern = r"\s+".join(re.escape(w) for w in core.split())
    out = []
    for m in re.finditer(pattern, text):
        a, b = m.start(), m.end()
        if not _bounded(text, core, a, b):
            continue
        line_start = text.rfind("\n", 0, a) + 1
        if search[:1].isspace() and not text[line_start:a].strip():
            a = line_start  # the search's own indentation stands for the file's
        if search.endswith("\n") and text.startswith("\n", b):
            b += 1  # and its line break for the file's
        out.append((a, b))
    return out


def _first_line(text: str) -> str:
    return next((ln for ln in text.splitlines() if ln.strip()), "")


def _closest(rel: str, text: str, edit: Edit) -> str:
    """The line(s) of the file most like the search text, as the search to send instead."""
    lines = text.splitlines()
    wanted = edit.search.strip("\n").splitlines() or [edit.search]
    starts = difflib.get_close_matches(wanted[0], lines, n=1, cutoff=_CLOSE)
    if not starts:
        return (
            f"Copy the search text exactly from the file as it is now (the numbered lines above, without "
            f"the numbers), e.g. {example(rel, replace=edit.replace)}; or send {example(rel, content=True)}"
        )
    first = lines.index(starts[0])
    block = "\n".join(lines[first : first + len(wanted)])
    if text.count(block) != 1:
        block = starts[0]
    replace = edit.replace if edit.replace.strip() != block.strip() else NEW_TEXT  # never suggest a no-op
    return f"The file has {block!r} (line {first + 1}); send {example(rel, search=block, replace=replace)}"


def _widened(rel: str, text: str, edit: Edit, span: tuple[int, int]) -> str:
    """The first occurrence with the line after it: a search text that occurs once."""
    at, stop = span
    end = text.find("\n", stop)
    end = text.find("\n", end + 1) if end != -1 else -1
    start = text.rfind("\n", 0, at) + 1
    wider = text[start : end if end != -1 else len(text)]
    if len(find(text, wider)) != 1:
        return f"Add a neighbouring line to the search text so that it occurs once, or send {example(rel, content=True)}"
    new = wider[: at - start] + edit.replace + wider[stop - start :]
    return f"Include a neighbouring line so the text occurs once: {example(rel, search=wider, replace=new)}"
