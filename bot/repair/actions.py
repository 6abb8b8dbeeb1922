"""One action of a repair plan applied to a file's text, and, when it cannot be, a refusal that says exactly
what to send instead: a small model repeats a mistake it is only told about, and fixes one it is shown.

An action is `{"file", "edits": [{"search", "replace"}]}` (search/replace, each search exactly once) or
`{"file", "content"}` (the whole file, new or replaced). What kind of file it writes follows from the file's
name (a .yaml file is YAML, a .sql file a SQL snippet, a .md file a note); a `type` the model adds is ignored."""

from __future__ import annotations

import difflib
import json
from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

MAX_EDITS = 20
KINDS = {".yaml": "YAML file", ".yml": "YAML file", ".sql": "SQL snippet", ".md": "note"}
_CLOSE = 0.5  # how alike a line must be to the search text to be offered as the one meant


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


def example(rel: str, *, search: str | None = None, replace: str = "<the new text>", content: bool = False) -> str:
    """A corrected action as compact JSON, to paste into a refusal."""
    if content:
        return json.dumps({"file": rel, "content": f"<the whole new {file_kind(rel)}>"}, ensure_ascii=False)
    edit = {"search": search or "<exact lines copied from the file>", "replace": replace}
    return json.dumps({"file": rel, "edits": [edit]}, ensure_ascii=False)


def apply_action(action: Action, rel: str, current: str | None) -> str:
    """The file's text after the action; Unusable naming what does not apply and what to send instead."""
    if action.content is not None and action.edits:
        raise Unusable(f"send either `edits` or `content`, not both: {example(rel)} changes lines, "
                       f"{example(rel, content=True)} writes the whole file")  # fmt: skip
    if action.content is not None:
        return action.content
    if not action.edits:
        raise Unusable(f"the action has neither `edits` nor `content`; send {example(rel)} to change lines "
                       f"or {example(rel, content=True)} to write the whole file")  # fmt: skip
    if current is None:
        raise Unusable(f"{rel} does not exist, so there is nothing to search; to create it send "
                       f"{example(rel, content=True)}")  # fmt: skip
    text = current
    for i, edit in enumerate(action.edits):
        if not edit.search:
            raise Unusable(f"edits[{i}]: `search` is empty; copy the lines to change from the file, e.g. "
                           f"{example(rel, search=_first_line(text), replace=edit.replace or '<new text>')}")  # fmt: skip
        found = text.count(edit.search)
        if found == 0:
            raise Unusable(f"edits[{i}]: search text not found in {rel}: {edit.search[:120]!r}. "
                           + _closest(rel, text, edit))  # fmt: skip
        if found > 1:
            raise Unusable(f"edits[{i}]: search text found {found} times (must be exactly once) in {rel}: "
                           f"{edit.search[:120]!r}. " + _widened(rel, text, edit))  # fmt: skip
        text = text.replace(edit.search, edit.replace, 1)
    return text


def _first_line(text: str) -> str:
    return next((ln for ln in text.splitlines() if ln.strip()), "")


def _closest(rel: str, text: str, edit: Edit) -> str:
    """The line(s) of the file most like the search text, as the search to send instead."""
    lines = text.splitlines()
    wanted = edit.search.strip("\n").splitlines() or [edit.search]
    starts = difflib.get_close_matches(wanted[0], lines, n=1, cutoff=_CLOSE)
    if not starts:
        return (f"Copy the search text exactly from the file as it is now (the numbered lines above, without "
                f"the numbers), e.g. {example(rel, replace=edit.replace)}; or send {example(rel, content=True)}")  # fmt: skip
    first = lines.index(starts[0])
    block = "\n".join(lines[first : first + len(wanted)])
    if text.count(block) != 1:
        block = starts[0]
    return f"The file has {block!r} (line {first + 1}); send {example(rel, search=block, replace=edit.replace)}"


def _widened(rel: str, text: str, edit: Edit) -> str:
    """The first occurrence with the line after it: a search text that occurs once."""
    at = text.index(edit.search)
    end = text.find("\n", at + len(edit.search))
    end = text.find("\n", end + 1) if end != -1 else -1
    start = text.rfind("\n", 0, at) + 1
    wider = text[start : end if end != -1 else len(text)]
    if text.count(wider) != 1:
        return f"Add a neighbouring line to the search text so that it occurs once, or send {example(rel, content=True)}"
    new = wider.replace(edit.search, edit.replace, 1)
    return f"Include a neighbouring line so the text occurs once: {example(rel, search=wider, replace=new)}"
