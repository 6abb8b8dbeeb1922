"""What the model sees about one failing case: the question, gold, prediction, how the answer differed (the
scorers' first difference between rows aligned by their key, the row counts, and every meaning-changing part
of the structural diff, the same words the reports show), and only the KB lines the agent said it used
(`Prediction.used`), numbered, with a few lines around them. An agent that returns no `used` (or only refs
that cannot be shown) gets the KB files whose names, metric names or tables the gold SQL, the agent's SQL and
the question mention instead (bot.repair.mentions).

From a check (`repair --from-check DIR`, whose comparison.json links regressions to the diff; bot.compare.causes), also:
the changed KB lines the case is linked to with their base → head diff, or that the diff does not explain it,
and the base's prediction (what the agent answered before the change)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.base.results import CaseResult, Verdict
from bot.cases.model import Case
from bot.compare.comparison import Comparison
from bot.kb.files import KBFiles, RefusedPath
from bot.repair.changehints import ChangeHint, change_hints, changed_ranges, kb_text
from bot.repair.mentions import find_mentions
from bot.repair.wording import rows_in_words
from bot.scoring.structural_diff import Difference

AROUND = 3  # lines shown before and after each used range
MAX_EXCERPT_LINES = 120  # per file
MAX_FILES = 8
MAX_TEXT = 4000  # characters of SQL or messages shown
MAX_DIFFERENCES = 8  # structural differences listed, most important first
MAX_FIXED = 5  # cases the change fixed, named so that a repair keeps them
_REF = re.compile(r"^(?P<path>[^:]+):(?P<first>\d+)(?:-(?P<last>\d+))?$")


@dataclass(frozen=True)
class Excerpt:
    file: str
    ranges: tuple[tuple[int, int], ...]  # the used ranges (1-based, inclusive)
    text: str  # numbered lines "  12 | ..." with `AROUND` lines of context; ">" marks used lines


@dataclass(frozen=True)
class FailureContext:
    id: str
    question: str
    category: str
    status: str
    gold: tuple[str, ...]
    prediction: str | None
    reason: str
    first_difference: str
    structural: str
    instructions: str
    excerpts: tuple[Excerpt, ...]
    # Every structural difference that changes meaning, in words (the report shows the first three), and
    # the row counts of the two results when they differ.
    differences: tuple[str, ...] = ()
    rows: str = ""
    unused_refs: tuple[str, ...] = ()  # refs not shown (outside the KB, unreadable), named for the record
    # From a check's comparison: "kb/metrics/dau.yaml lines 9–10" per linked cause, and their -/+ lines.
    causes: tuple[str, ...] = ()
    kb_diff: str = ""
    explained: bool | None = None  # a regression of a linked comparison: whether the diff touched its spans
    base_prediction: str | None = None
    # A line of a shown file to build the reply's example from: (file, line number, text). The first line
    # the pull request changed that this answer used, else the first line it cited. A small model copies
    # the example it is given; one built from a real line is an edit that applies.
    example: tuple[str, int, str] | None = None
    # Where the excerpts come from: "used" (the lines the agent cited) or "mentions" (no usable `used`: the
    # KB files the SQL and the question name; `>` marks the lines about those names).
    excerpts_from: str = "used"
    # The linked hunks in the shape an edit must take (bot.repair.changehints): removed lines to insert after a
    # line that exists now, lines changed together (swapped values) to edit together.
    changes: tuple[ChangeHint, ...] = ()
    # Cases the same change fixed (they fail on the base): the change's intent, which a repair keeps.
    also_fixed: tuple[str, ...] = ()


def parse_refs(used: tuple[str, ...]) -> tuple[dict[str, list[tuple[int, int]]], list[str]]:
    """{file: [(first, last), ...]} from "kb/metrics/dau.yaml:1-14" refs; the refs that do not parse."""
    out: dict[str, list[tuple[int, int]]] = {}
    bad: list[str] = []
    for ref in used:
        m = _REF.match(str(ref).strip())
        if not m:
            bad.append(str(ref)[:200])
            continue
        first = int(m["first"])
        last = int(m["last"] or first)
        if first < 1 or last < first:
            bad.append(str(ref)[:200])
            continue
        out.setdefault(m["path"], []).append((first, last))
    return out, bad


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def number_lines(text: str, ranges: list[tuple[int, int]], *, around: int = AROUND) -> str:
    """The used ranges of `text` with `around` lines each side, numbered; `...` between the windows."""
    lines = text.splitlines()
    windows = _merge([(max(1, a - around), min(len(lines), b + around)) for a, b in ranges])
    used = {n for a, b in ranges for n in range(a, b + 1)}
    width = len(str(len(lines)))
    out: list[str] = []
    shown = 0
    for a, b in windows:
        if out:
            out.append("     ...")
        for n in range(a, b + 1):
            if shown >= MAX_EXCERPT_LINES:
                out.append("     ... (cut)")
                return "\n".join(out)
            mark = ">" if n in used else " "
            out.append(f"{mark} {n:>{width}} | {lines[n - 1]}")
            shown += 1
    return "\n".join(out)


def excerpts(
    kb: KBFiles, used: tuple[str, ...]
) -> tuple[tuple[Excerpt, ...], tuple[str, ...], dict[str, str]]:
    """The excerpts of the files `used` names, the refs not shown, and the texts of the files shown."""
    refs, skipped = parse_refs(used)
    out: list[Excerpt] = []
    texts: dict[str, str] = {}
    for path, ranges in refs.items():
        if len(out) >= MAX_FILES:
            skipped.append(f"{path} (more than {MAX_FILES} files)")
            continue
        try:
            text = kb.read(path)
        except (RefusedPath, OSError, UnicodeDecodeError):
            text = None
        if text is None:
            skipped.append(path[:200])
            continue
        merged = tuple(_merge(ranges))
        rel = kb.relative(path)
        texts[rel] = text
        out.append(Excerpt(file=rel, ranges=merged, text=number_lines(text, list(merged))))
    return tuple(out), tuple(skipped), texts


def mentioned_excerpts(
    kb: KBFiles, sql: tuple[str | None, ...], question: str
) -> tuple[tuple[Excerpt, ...], dict[str, str]]:
    """Excerpts of the KB files the SQL texts and the question mention (for an answer without `used`), and
    their texts."""
    files = kb.files()
    out: list[Excerpt] = []
    for m in find_mentions(files, sql, question=question):
        text = files[m.file]
        around = len(text.splitlines()) if m.whole else AROUND
        out.append(
            Excerpt(file=m.file, ranges=m.marked, text=number_lines(text, list(m.marked), around=around))
        )
    return tuple(out), {e.file: files[e.file] for e in out}


def _cut(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " ... (cut)"


def _from_check(
    result: CaseResult, comparison: Comparison | None, kb: KBFiles
) -> tuple[dict[str, object], tuple[str, ...]]:
    """The FailureContext fields a check's comparison gives, and the lines its linked diff added (the head
    side, for the reply's example)."""
    change = next((c for c in comparison.cases if c.id == result.id), None) if comparison else None
    if comparison is None or change is None:
        return {}, ()
    linked = comparison.causes_of(change.id)
    explained = bool(linked) if comparison.linked and change.judged == "regressed" else None
    diff = "\n".join(f"--- {c.file} {c.where}\n{c.diff}" for c in linked if c.diff)
    added = tuple(
        ln[1:] for c in linked for ln in c.diff.splitlines() if ln.startswith("+") and ln[1:].strip()
    )
    fields: dict[str, object] = {
        "causes": tuple(f"{c.file} {c.where}" for c in linked),
        "kb_diff": _cut(diff),
        "explained": explained,
        "base_prediction": _cut(change.base_sql) if change.base_sql else None,
        "changes": change_hints([(c.file, c.hunks) for c in linked], lambda path: kb_text(kb, path)),
        "also_fixed": tuple(
            f"`{c.id}`" + (f" ({_cut(c.question)[:200]})" if c.question else "")
            for c in comparison.judged_as("fixed")[:MAX_FIXED]
        ),
    }
    return fields, added


def changed_excerpts(
    kb: KBFiles, comparison: Comparison | None, case_id: str, shown: set[str]
) -> tuple[tuple[Excerpt, ...], dict[str, str]]:
    """The changed lines of each linked file the answer no longer cites (a removed alias, a deleted filter: the
    head's answer does not use what is gone), as they are now, so that the file to edit is on the page."""
    causes = comparison.causes_of(case_id) if comparison else []
    found = changed_ranges(kb, [(c.file, c.hunks) for c in causes], shown, room=MAX_FILES - len(shown))
    out = tuple(Excerpt(rel, ranges, number_lines(text, list(ranges))) for rel, ranges, text in found)
    return out, {rel: text for rel, _, text in found}


def example_line(
    shown: tuple[Excerpt, ...], texts: dict[str, str], added: tuple[str, ...]
) -> tuple[str, int, str] | None:
    """The first changed line (`added`, the head side of the diff) found once in a shown file, else the first
    non-blank line the answer cited that occurs once in its file."""
    lines = {ex.file: texts.get(ex.file, "").splitlines() for ex in shown}
    for line in added:
        for ex in shown:
            if lines[ex.file].count(line) == 1:
                return ex.file, lines[ex.file].index(line) + 1, line
    for ex in shown:
        own = lines[ex.file]
        for first, last in ex.ranges:
            for n in range(first, min(last, len(own)) + 1):
                if own[n - 1].strip() and own.count(own[n - 1]) == 1:
                    return ex.file, n, own[n - 1]
    return None


def structural_differences(verdict: Verdict | None) -> tuple[str, ...]:
    """Each difference the structural scorer found (details["differences"]), described as the reports do."""
    found = (verdict.details.get("differences") if verdict else None) or []
    out: list[str] = []
    for d in found[:MAX_DIFFERENCES]:
        try:
            out.append(
                Difference(
                    d["part"], d["change"], d.get("gold", ""), d.get("pred", ""), d.get("in", "")
                ).describe()
            )
        except (KeyError, TypeError):
            continue  # written by another version: the message still says it
    if len(found) > MAX_DIFFERENCES:
        out.append(f"and {len(found) - MAX_DIFFERENCES} more")
    return tuple(out)


def row_counts(verdict: Verdict | None) -> str:
    details = verdict.details if verdict else {}
    gold, pred = details.get("gold_rows"), details.get("pred_rows")
    if not isinstance(gold, int) or not isinstance(pred, int):
        return ""
    return rows_in_words(gold, pred)


def failure_context(
    result: CaseResult, case: Case | None, kb: KBFiles, *, comparison: Comparison | None = None
) -> FailureContext:
    """`comparison`: the check's, when the run is its head (cause links, base prediction)."""
    deciding = result.verdicts.get(result.deciding_scorer or "") if result.deciding_scorer else None
    structural = result.verdicts.get("structural")
    shown, skipped, texts = excerpts(kb, result.prediction.used)
    source = "used"
    if not shown:
        question = result.question or (case.question if case else "")
        asked = " ".join(filter(None, (question, case.instructions if case else "")))  # "My market is ..."
        sql = (*(case.gold_sql if case else ()), result.prediction.sql)
        shown, texts = mentioned_excerpts(kb, sql, asked)
        source = "mentions"
    linked, added = _from_check(result, comparison, kb)
    changed, changed_texts = changed_excerpts(kb, comparison, result.id, {e.file for e in shown})
    shown, texts = shown + changed, {**texts, **changed_texts}
    return FailureContext(
        id=result.id,
        question=_cut(result.question or (case.question if case else "")),
        category=result.category,
        status=result.status,
        gold=tuple(_cut(g) for g in (case.gold_sql if case else ())),
        prediction=_cut(result.prediction.sql) if result.prediction.sql else None,
        reason=_cut(result.reason),
        first_difference=_cut(deciding.message if deciding else ""),
        structural=_cut(structural.message if structural else ""),
        instructions=_cut(case.instructions if case else ""),
        differences=structural_differences(structural),
        rows=row_counts(deciding),
        excerpts=shown,
        unused_refs=skipped,
        example=example_line(shown, texts, added),
        excerpts_from=source,
        **linked,  # type: ignore[arg-type]
    )
