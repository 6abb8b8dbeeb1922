"""Import defog sql-eval (questions/*.csv + db/*.sql) as a sqlcanary suite.

Case ids are `<csv stem>:<0-based row>`, as in defog's cases.jsonl. Gold SQL keeps defog's `{a, b}` column
choices (the loader expands them) and splits `;`-separated alternatives into a list.
"""

from __future__ import annotations

import csv
import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.base.errors import CaseFileError
from bot.cases.importers.common import (
    ImportReport,
    SuiteDraft,
    dump_yaml,
    ensure_replaceable,
    parse_problem,
    publish_suite,
    split_statements,
)

REQUIRED_COLUMNS = ("question", "query", "db_name")
CURRENT_TIME_RE = re.compile(r"\b(current_date|current_timestamp|localtimestamp|now\s*\()", re.IGNORECASE)
DATE_RELATIVE_TAG = "date-relative"
CARRIED_FILES = ("LICENSE*", "SOURCE_COMMITS.txt")


@dataclass(frozen=True)
class DefogRow:
    path: Path
    line: int
    stem: str
    index: int
    question: str
    query: str
    db: str
    category: str
    instructions: str

    @property
    def case_id(self) -> str:
        return f"{self.stem}:{self.index}"


def import_defog(src: Path, out: Path) -> ImportReport:
    """Read `src/questions/*.csv` and `src/db/<name>.sql`; write a suite to `out`."""
    src, out = Path(src), Path(out)
    ensure_replaceable(out)
    rows = [row for csv_path in _question_files(src) for row in read_questions(csv_path)]
    warnings = cross_check(src / "cases.jsonl", rows)
    by_stem: dict[str, list[dict[str, Any]]] = {}
    dumps: dict[str, Path] = {}
    skipped: list[str] = []
    for row in rows:
        case, problem = build_case(row)
        if case is None:
            warnings.append(f"{row.path.name}:{row.line}: skipped {row.case_id}: {problem}")
            skipped.append(row.case_id)
            continue
        dumps.setdefault(row.db, _dump_for(src, row))
        by_stem.setdefault(row.stem, []).append(case)
    if not dumps:
        raise CaseFileError("no usable questions", path=str(src / "questions"))
    draft = _draft(src, by_stem, dumps)
    publish_suite(draft, out, importer="defog", source=src)
    count = sum(len(cases) for cases in by_stem.values())
    return ImportReport(out, count, tuple(sorted(dumps)), tuple(warnings), tuple(skipped))


def _question_files(src: Path) -> list[Path]:
    folder = src / "questions"
    files = sorted(folder.glob("*.csv")) if folder.is_dir() else []
    if not files:
        raise CaseFileError("no questions/*.csv here (is this defog sql-eval's data folder?)", path=str(src))
    return files


def read_questions(path: Path) -> list[DefogRow]:
    """The rows of one questions CSV, each with the line its record starts on."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            return _read_rows(path, csv.DictReader(fh))
    except UnicodeDecodeError as exc:
        raise CaseFileError(f"not UTF-8 text: {exc.reason}", path=str(path)) from exc


def _read_rows(path: Path, reader: csv.DictReader) -> list[DefogRow]:
    try:
        header = reader.fieldnames or []
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise CaseFileError(
                f"missing column {missing[0]!r} (found: {', '.join(header)})", path=str(path), line=1
            )
        rows, start = [], reader.line_num + 1
        for index, rec in enumerate(reader):
            if None in rec or any(rec.get(c) is None for c in REQUIRED_COLUMNS):
                raise CaseFileError("wrong number of fields", path=str(path), line=start)
            rows.append(_row(path, start, index, rec))
            start = reader.line_num + 1
        return rows
    except csv.Error as exc:
        raise CaseFileError(f"unreadable CSV: {exc}", path=str(path), line=reader.line_num) from exc


def _row(path: Path, line: int, index: int, rec: dict[str, str]) -> DefogRow:
    return DefogRow(
        path=path,
        line=line,
        stem=path.stem,
        index=index,
        question=rec["question"],
        query=rec["query"],
        db=rec["db_name"].strip(),
        category=(rec.get("query_category") or "").strip(),
        instructions=rec.get("instructions") or "",
    )


def build_case(row: DefogRow) -> tuple[dict[str, Any] | None, str]:
    """The case for a row, or None and the reason it cannot be judged."""
    alternatives = split_statements(row.query)
    if not row.question.strip():
        return None, "empty question"
    if not alternatives:
        return None, "empty query (no gold to judge against)"
    if not row.db:
        return None, "empty db_name"
    for alt in alternatives:
        problem = parse_problem(alt)
        if problem:
            return None, f"gold does not parse: {problem}"
    tags = [row.stem, row.db]
    if row.category:
        tags.append(f"category:{row.category}")
    if CURRENT_TIME_RE.search(row.query):
        tags.append(DATE_RELATIVE_TAG)
    case: dict[str, Any] = {"id": row.case_id, "db": row.db, "tags": tags, "question": row.question}
    if row.instructions.strip():
        case["instructions"] = row.instructions
    case["gold_sql"] = alternatives[0] if len(alternatives) == 1 else alternatives
    return case, ""


def _dump_for(src: Path, row: DefogRow) -> Path:
    dump = src / "db" / f"{row.db}.sql"
    if not dump.is_file():
        raise CaseFileError(
            f"no dump for database {row.db!r} (expected {dump})",
            path=str(row.path),
            line=row.line,
            case_id=row.case_id,
        )
    return dump


def cross_check(jsonl: Path, rows: list[DefogRow]) -> list[str]:
    """Compare the CSVs with defog's cases.jsonl (when present): ids, questions, databases."""
    if not jsonl.is_file():
        return []
    warnings: list[str] = []
    listed: dict[str, tuple[int, dict[str, Any]]] = {}
    for lineno, text in enumerate(jsonl.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
            listed[str(obj["id"])] = (lineno, obj)
        except (ValueError, KeyError, TypeError):
            warnings.append(f"{jsonl.name}:{lineno}: not a JSON object with an id; not cross-checked")
    by_id = {row.case_id: row for row in rows}
    for label, ids in (
        ("only in the CSVs", by_id.keys() - listed),
        (f"only in {jsonl.name}", listed - by_id.keys()),
    ):
        if ids:
            shown = ", ".join(sorted(ids)[:5])
            warnings.append(f"{len(ids)} case id(s) {label}: {shown}{', ...' if len(ids) > 5 else ''}")
    for case_id, (lineno, obj) in listed.items():
        row = by_id.get(case_id)
        if row is None:
            continue
        for key, value in (("question", row.question), ("db", row.db)):
            if obj.get(key) != value:
                warnings.append(
                    f"{jsonl.name}:{lineno}: {key} of {case_id} differs from {row.path.name}:{row.line} (the CSV wins)"
                )
    return warnings


def _date_relative_dbs(dumps: dict[str, Path]) -> list[str]:
    return [
        db for db, path in sorted(dumps.items()) if CURRENT_TIME_RE.search(path.read_text(encoding="utf-8"))
    ]


def _draft(src: Path, by_stem: dict[str, list[dict[str, Any]]], dumps: dict[str, Path]) -> SuiteDraft:
    texts = {"suite.yml": _suite_yml(dumps)}
    texts.update({f"cases/{stem}.yml": dump_yaml(cases) for stem, cases in sorted(by_stem.items())})
    copies = {f"fixtures/{db}.sql": path for db, path in sorted(dumps.items())}
    for db in sorted(dumps):
        notes = src / "metadata" / f"{db}.json"
        if notes.is_file():
            copies[f"metadata/{db}.json"] = notes
    for pattern in CARRIED_FILES:
        copies.update({p.name: p for p in sorted(src.glob(pattern)) if p.is_file()})
    return SuiteDraft(texts=texts, copies=copies)


def _suite_yml(dumps: dict[str, Path]) -> str:
    dated = _date_relative_dbs(dumps)
    head = [
        "# defog sql-eval, imported by `sqlcanary import defog`.",
        "# Case ids are <csv stem>:<0-based row>, as in defog's cases.jsonl. gold_sql keeps defog's `{a, b}` column",
        "# choices (any non-empty subset of the listed columns is accepted) and its `;`-separated alternatives.",
        "# metadata/<db>.json holds defog's column notes; LICENSE.* and SOURCE_COMMITS.txt say where the data is from.",
    ]
    if dated:
        note = (
            f"Dates: the fixtures of {', '.join(dated)} insert dates relative to CURRENT_DATE, so their rows change"
            " with the day the suite runs; gold and prediction are computed on the same day. Cases whose gold itself"
            f" reads the current date are tagged `{DATE_RELATIVE_TAG}`."
        )
        head += textwrap.wrap(note, width=110, initial_indent="# ", subsequent_indent="# ")
    body = dump_yaml({"name": "defog", "databases": {db: f"fixtures/{db}.sql" for db in sorted(dumps)}})
    defaults = [
        "defaults:",
        "  category: query",
        "  # defog's evaluator counts a prediction correct when the gold's columns are a subset of the predicted",
        "  # ones (a prediction may add columns the question did not forbid), so compare in subset mode.",
        "  compare:",
        "    columns: subset",
    ]
    return "\n".join(head) + "\n" + body + "\n".join(defaults) + "\n"
