"""Why a case is in the report, in words every report shares (comment, summary, HTML, `sqlcanary show`): the
causes a comparison linked (bot.compare.causes), the verdict of one case in a sentence, and the base → head diff of its
prediction. Pure: no I/O, no Jinja."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection
from dataclasses import dataclass

from bot.compare.causes import MAX_UNCITED
from bot.compare.comparison import CaseChange, Comparison

MAX_DIFF_LINES = 80


@dataclass(frozen=True)
class CauseView:
    """One cause as the reports show it: `file` `where` (changed here) → the regressed cases that used it."""

    file: str
    where: str  # "lines 9–10"
    diff: str  # the changed lines, -/+ (capped by bot.compare.causes)
    cases: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.file} {self.where}"


def cause_views(cmp: Comparison) -> tuple[CauseView, ...]:
    return tuple(CauseView(c.file, c.where, c.diff, c.cases) for c in cmp.causes)


def _names(files: tuple[str, ...]) -> str:
    quoted = [f"`{f}`" for f in files]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def uncited_note(cmp: Comparison) -> str:
    """Under "not explained": the changed files no answer cites, named ("the change also touched
    `agent/answers.json`, which no answer cites"); "" when every changed file is cited or nothing is unexplained.
    Markdown: the file names are code spans."""
    files = cmp.uncited_files
    if not cmp.linked or not cmp.unexplained or not files:
        return ""
    shown = files[:MAX_UNCITED]
    more = len(files) - len(shown)
    names = _names(shown) + (f" and {more} more file{'s' * (more != 1)}" if more else "")
    if len(files) < len(cmp.changed_files):
        return f"The change also touched {names}, which no answer cites."
    return f"The change touched only {names}, which no answer cites."


def _named_list(named: Collection[str]) -> re.Pattern[str]:
    one = "|".join(re.escape(i) for i in sorted(named, key=len, reverse=True))
    edge = r"[\w.-]"  # an id ends where no id character follows
    return re.compile(
        rf"(?<!, )(?<!{edge})(?:{one})(?!{edge})(?:, (?:{one})(?!{edge}))*(?: and (\d+) more)?(?!, |{edge})"
    )


def refer_to_named(text: str, named: Collection[str]) -> str:
    """`text` (a gate reason or a note) with each whole list of case ids that are all `named` (listed above it
    in the comment, under the causes) replaced by their number: "16 case(s) regressed, more than the 0 allowed:
    the 16 cases above", so the comment lists each case once. Other lists and texts are unchanged."""
    if not named:
        return text

    def counted(m: re.Match[str]) -> str:
        n = m[0].split(" and ", 1)[0].count(", ") + 1 + int(m[1] or 0)
        if n == len(named):
            return "the case above" if n == 1 else f"the {n} cases above"
        return f"{n} of the cases above"

    return _named_list(named).sub(counted, text)


def case_causes(cmp: Comparison, change: CaseChange) -> tuple[CauseView, ...]:
    """The causes one case is listed under (empty: not a regression, or not explained by the diff)."""
    return tuple(v for v in cause_views(cmp) if change.id in v.cases)


_VERDICTS = {
    "regressed": "regressed: passed on base, fails on head",
    "fixed": "fixed: failed on base, passes on head",
    "flaky": "flaky: the attempts disagree and the difference is not significant",
    "became_invalid": "became invalid: the gold or the fixture broke on head",
    "became_valid": "became valid: the gold runs again on head",
    "error_changed": "still failing, with another error class",
    "still_failing": "still failing: fails on base and on head",
    "still_passing": "still passing",
    "new": "new: only in head",
    "removed": "removed: only in base",
    "passed": "passed",
    "failed": "failed: the answer is wrong",
    "errored": "errored: the agent gave no usable answer",
    "invalid": "invalid: the gold does not run (excluded from the pass rate)",
}


def verdict_words(
    group: str,
    *,
    outcome: str | None = None,
    head_status: str | None = None,
    renamed_from: str | None = None,
    attempts: str = "",
) -> str:
    """ "regressed: passed on base, fails on head (failed)", in words."""
    judged = outcome if group == "renamed" and outcome else group
    text = _VERDICTS.get(judged, judged.replace("_", " "))
    if renamed_from:
        text += f" (renamed from {renamed_from})"
    if head_status == "errored" and judged == "regressed":
        text = "regressed: passed on base, the agent gave no usable answer on head"
    if attempts:
        text += f"; passes {attempts}"
    return text


def prediction_diff(base_sql: str | None, head_sql: str | None) -> str:
    """A unified diff of the base prediction → the head prediction ("" when either is missing or they are equal)."""
    if not base_sql or not head_sql or base_sql.strip() == head_sql.strip():
        return ""
    old, new = base_sql.strip().splitlines(), head_sql.strip().splitlines()
    # Full context: the reader sees the whole head query with the changed lines marked.
    lines = list(difflib.unified_diff(old, new, "base", "head", lineterm="", n=max(len(old), len(new))))
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"… ({len(lines) - MAX_DIFF_LINES} more diff lines)"]
    return "\n".join(lines)
