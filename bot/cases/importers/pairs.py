"""Import Spider or BIRD pairs (`[{question, query | SQL, db_id, ...}]`, a JSON list) and their SQLite databases as
a sqlcanary suite: one case file per db_id (`cases/<db_id>.yml`), one PostgreSQL fixture per database converted
from `<db-dir>/<db_id>/<db_id>.sqlite` (bot.cases.importers.sqlite_fixture), the gold SQL rewritten for PostgreSQL
(bot.cases.importers.sqlite_sql) with what may not mean the same said per case.

Case ids: `<db_id>:<question_id>` for BIRD (its own ids), `<db_id>:<n>` for Spider (the pair's position in the
file, from 0), so they stay the same when the file is imported again. BIRD's `evidence` becomes the case's
instructions, its `difficulty` a tag.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.base.errors import CaseFileError
from bot.base.yamlread import read_text_file
from bot.cases.importers.common import ImportReport, SuiteDraft, dump_yaml, ensure_replaceable, publish_suite
from bot.cases.importers.sqlite_fixture import SqliteSchema, convert_sqlite
from bot.cases.importers.sqlite_sql import transpile_gold

DB_ID_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}")
SQL_KEYS = ("query", "SQL", "sql")
TRANSPILED_TAG = (
    "transpiled"  # a case whose gold was rewritten in a way worth a look (see the import's warnings)
)


@dataclass(frozen=True)
class Pair:
    index: int  # position in the file, from 0
    id: str
    db: str
    question: str
    sql: str
    evidence: str = ""
    difficulty: str = ""


def read_pairs(path: Path, *, benchmark: str) -> list[Pair]:
    """Every pair in the JSON list at `path`; a malformed item is an error naming its index."""
    text = read_text_file(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseFileError(f"not JSON: {exc.msg}", path=str(path), line=exc.lineno) from exc
    if not isinstance(data, list):
        raise CaseFileError(
            "expected a JSON list of {question, query or SQL, db_id} objects", path=str(path), line=1
        )
    pairs, seen = [], set()
    for index, item in enumerate(data):
        pair = _pair(item, index, path=path, benchmark=benchmark)
        if pair.id in seen:
            raise CaseFileError(f"item [{index}]: duplicate id", path=str(path), case_id=pair.id)
        seen.add(pair.id)
        pairs.append(pair)
    if not pairs:
        raise CaseFileError("the list is empty", path=str(path))
    return pairs


def _pair(item: Any, index: int, *, path: Path, benchmark: str) -> Pair:
    where = f"item [{index}]"
    if not isinstance(item, dict):
        raise CaseFileError(f"{where}: not a JSON object", path=str(path))
    sql_key = next((k for k in SQL_KEYS if isinstance(item.get(k), str)), None)
    missing = [k for k in ("question", "db_id") if not isinstance(item.get(k), str) or not item[k].strip()]
    if sql_key is None:
        missing.append("query (Spider) or SQL (BIRD)")
    if missing:
        raise CaseFileError(f"{where}: missing {', '.join(missing)}", path=str(path))
    db = item["db_id"].strip()
    if not DB_ID_RE.fullmatch(db):
        raise CaseFileError(f"{where}: db_id {db!r} is not a plain name", path=str(path))
    own = item.get("question_id") if benchmark == "bird" else None
    case_id = f"{db}:{own if isinstance(own, (int, str)) and str(own).strip() else index}"
    return Pair(
        index=index,
        id=case_id,
        db=db,
        question=item["question"].strip(),
        sql=item[sql_key].strip(),
        evidence=str(item.get("evidence") or "").strip(),
        difficulty=str(item.get("difficulty") or "").strip(),
    )


def find_database(db_dir: Path, db: str) -> Path | None:
    """`<db_dir>/<db>/<db>.sqlite` (Spider's `database/`, BIRD's `dev_databases/`), or `<db_dir>/<db>.sqlite`."""
    for candidate in (db_dir / db / f"{db}.sqlite", db_dir / f"{db}.sqlite", db_dir / db / f"{db}.db"):
        if candidate.is_file():
            return candidate
    return None


def build_case(pair: Pair, schema: SqliteSchema, benchmark: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The case of one pair and what to say about it (a skipped pair: None and the reason)."""
    done = transpile_gold(pair.sql, names=schema.names)
    said = [f"case {pair.id}: {n}" for n in done.notes]
    if done.sql is None:
        return None, [*said, f"case {pair.id}: skipped: the gold {done.problem}"]
    tags = [benchmark, pair.db]
    if pair.difficulty:
        tags.append(pair.difficulty)
    if done.notes:
        tags.append(TRANSPILED_TAG)
    case: dict[str, Any] = {"id": pair.id, "db": pair.db, "tags": tags, "question": pair.question}
    if pair.evidence:
        case["instructions"] = pair.evidence
    case["gold_sql"] = done.sql
    return case, said


def import_pairs(src: Path, *, db_dir: Path, out: Path, benchmark: str) -> ImportReport:
    """`benchmark`: "spider" or "bird". Read the pairs, convert each database they use, write a suite to `out`."""
    src, db_dir, out = Path(src), Path(db_dir), Path(out)
    ensure_replaceable(out)
    if not db_dir.is_dir():
        raise CaseFileError("the database folder does not exist", path=str(db_dir))
    pairs = read_pairs(src, benchmark=benchmark)
    warnings: list[str] = []
    skipped: list[str] = []
    by_db: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="sqlcanary-import-") as tmp:
        fixtures: dict[str, Path] = {}
        schemas: dict[str, SqliteSchema | None] = {}
        for pair in pairs:
            if pair.db not in schemas:
                schemas[pair.db] = _convert(db_dir, pair.db, Path(tmp), fixtures, warnings)
            schema = schemas[pair.db]
            if schema is None:
                skipped.append(pair.id)
                continue
            case, said = build_case(pair, schema, benchmark)
            warnings.extend(said)
            if case is None:
                skipped.append(pair.id)
                continue
            by_db.setdefault(pair.db, []).append(case)
        if not by_db:
            raise CaseFileError("no pair could be imported (see the warnings above)", path=str(src))
        used = {db: fixtures[db] for db in sorted(by_db)}
        draft = SuiteDraft(
            texts={
                "suite.yml": _suite_yml(benchmark, src, used),
                **{f"cases/{db}.yml": dump_yaml(cases) for db, cases in sorted(by_db.items())},
            },
            copies={f"fixtures/{db}.sql": path for db, path in used.items()},
        )
        publish_suite(draft, out, importer=benchmark, source=src)
    count = sum(len(cases) for cases in by_db.values())
    return ImportReport(out, count, tuple(sorted(by_db)), tuple(warnings), tuple(skipped))


def _convert(
    db_dir: Path, db: str, tmp: Path, fixtures: dict[str, Path], warnings: list[str]
) -> SqliteSchema | None:
    found = find_database(db_dir, db)
    if found is None:
        warnings.append(
            f"database {db}: no {db}/{db}.sqlite in {db_dir}: its cases are skipped (give --db-dir the folder "
            "holding one folder per db_id: Spider's database/, BIRD's dev_databases/)"
        )
        return None
    target = tmp / f"{db}.sql"
    with target.open("w", encoding="utf-8") as fh:
        schema, said = convert_sqlite(found, fh)
    fixtures[db] = target
    warnings.extend(f"database {db}: {w}" for w in said)
    return schema


def _suite_yml(benchmark: str, src: Path, fixtures: dict[str, Path]) -> str:
    title = {"spider": "Spider", "bird": "BIRD"}.get(benchmark, benchmark)
    head = [
        f"# {title} pairs from {src.name}, imported by `sqlcanary import {benchmark}`.",
        "# The fixtures are the SQLite databases converted for PostgreSQL (names lowercased, dates kept as text);",
        "# the gold SQL was rewritten from SQLite's dialect. Cases tagged `transpiled` were rewritten in a way that",
        "# may change their answer: the import's warnings say how.",
    ]
    body = dump_yaml(
        {"name": f"{benchmark}", "databases": {db: f"fixtures/{db}.sql" for db in sorted(fixtures)}}
    )
    return "\n".join(head) + "\n" + body
