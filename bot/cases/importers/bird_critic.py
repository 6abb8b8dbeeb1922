"""Import BIRD-CRITIC (PostgreSQL) JSONL tasks and their database dumps as a sqlcanary suite.

The user's issue text becomes the question, the solution (`sol_sql`, several statements = ONE gold script) the gold,
`preprocess_sql`/`clean_up_sql` the setup/teardown. Management tasks get checks on every table the solution
writes; efficiency tasks compare plan cost against the issue SQL. BIRD-CRITIC's Python `test_cases` cannot run here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.base.errors import CaseFileError
from bot.base.yamlread import read_text_file
from bot.cases.importers.common import (
    ImportReport,
    SuiteDraft,
    dump_yaml,
    ensure_replaceable,
    join_statements,
    parse_problem,
    publish_suite,
)
from bot.cases.importers.writes import find_write_targets, query_flags, table_checks
from bot.cases.model import CATEGORIES, READ_ONLY_CATEGORIES

DB_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,40}")
POSTGRES_NAMES = {"postgresql", "postgres", "pg"}


@dataclass(frozen=True)
class Instance:
    """One BIRD-CRITIC task as read from its JSONL line."""

    line: int
    id: str
    db: str
    question: str
    issue_sql: tuple[str, ...]
    sol_sql: tuple[str, ...]
    preprocess_sql: tuple[str, ...]
    clean_up_sql: tuple[str, ...]
    category: str | None
    efficiency: bool
    has_test_cases: bool
    language: str | None


@dataclass(frozen=True)
class BuiltCase:
    case: dict[str, Any] | None
    warnings: tuple[str, ...]


def import_bird_critic(jsonl: Path, *, db_dir: Path, out: Path) -> ImportReport:
    """Read the tasks in `jsonl` and one dump per db_id from `db_dir`; write a suite to `out`."""
    jsonl, db_dir, out = Path(jsonl), Path(db_dir), Path(out)
    ensure_replaceable(out)
    if not db_dir.is_dir():
        raise CaseFileError("the dump folder does not exist", path=str(db_dir))
    instances = read_instances(jsonl)
    warnings: list[str] = []
    skipped: list[str] = []
    by_db: dict[str, list[dict[str, Any]]] = {}
    dumps: dict[str, tuple[Path, ...]] = {}
    for inst in instances:
        built = build_case(inst)
        warnings.extend(f"{jsonl.name}:{inst.line}: instance {inst.id}: {w}" for w in built.warnings)
        if built.case is None:
            skipped.append(inst.id)
            continue
        if inst.db not in dumps:
            dumps[inst.db] = _require_dump(db_dir, inst, jsonl=jsonl)
        by_db.setdefault(inst.db, []).append(built.case)
    with_tests = [inst.id for inst in instances if inst.has_test_cases]
    if with_tests:
        warnings.append(_test_cases_warning(with_tests))
    if not by_db:
        raise CaseFileError("no instance could be imported (see the warnings above)", path=str(jsonl))
    publish_suite(_draft(by_db, dumps), out, importer="bird-critic", source=jsonl)
    count = sum(len(cases) for cases in by_db.values())
    return ImportReport(out, count, tuple(sorted(dumps)), tuple(warnings), tuple(skipped))


def read_instances(jsonl: Path) -> list[Instance]:
    """Every task in the file; a malformed line or a duplicate instance_id is an error naming its line."""
    text = read_text_file(jsonl)
    instances: list[Instance] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        inst = _instance(_json_object(raw, path=str(jsonl), line=lineno), path=str(jsonl), line=lineno)
        if inst.id in seen:
            raise CaseFileError(
                f"duplicate instance_id (first on line {seen[inst.id]})",
                path=str(jsonl),
                line=lineno,
                case_id=inst.id,
            )
        seen[inst.id] = lineno
        instances.append(inst)
    return instances


def _json_object(raw: str, *, path: str, line: int) -> dict[str, Any]:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CaseFileError(f"not JSON: {exc.msg} (column {exc.colno})", path=path, line=line) from exc
    if not isinstance(obj, dict):
        raise CaseFileError("each line must be a JSON object", path=path, line=line)
    return obj


def _instance(obj: dict[str, Any], *, path: str, line: int) -> Instance:
    if (
        "db_id" not in obj and "selected_database" in obj
    ):  # the name in BIRD-CRITIC's first PostgreSQL release
        obj = {**obj, "db_id": obj["selected_database"]}
    for key in ("instance_id", "db_id", "query"):
        if obj.get(key) in (None, ""):
            raise CaseFileError(f"missing {key!r}", path=path, line=line)
    case_id, db = str(obj["instance_id"]), str(obj["db_id"])
    if not DB_NAME_RE.fullmatch(db):
        raise CaseFileError(f"db_id {db!r} is not a plain identifier", path=path, line=line, case_id=case_id)
    category = obj.get("category")
    if category is not None and str(category).lower() not in CATEGORIES:
        raise CaseFileError(
            f"unknown category {category!r} (known: {', '.join(c.title() for c in CATEGORIES)})",
            path=path,
            line=line,
            case_id=case_id,
        )

    def sql_list(key: str) -> tuple[str, ...]:
        return _sql_list(obj.get(key), what=key, path=path, line=line, case_id=case_id)

    return Instance(
        line=line,
        id=case_id,
        db=db,
        question=str(obj["query"]),
        issue_sql=sql_list("issue_sql") if "issue_sql" in obj else sql_list("error_sql"),
        sol_sql=sql_list("sol_sql"),
        preprocess_sql=sql_list("preprocess_sql"),
        clean_up_sql=sql_list("clean_up_sql"),
        category=str(category).lower() if category is not None else None,
        efficiency=bool(obj.get("efficiency")),
        has_test_cases=bool(obj.get("test_cases")),
        language=str(obj["language"]) if obj.get("language") else None,
    )


def _sql_list(value: Any, *, what: str, path: str, line: int, case_id: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CaseFileError(f"{what} must be a list of SQL strings", path=path, line=line, case_id=case_id)
    return tuple(v for v in value if v.strip())


def build_case(inst: Instance) -> BuiltCase:
    """The sqlcanary case for a task, or None with the reason it is skipped."""
    if inst.language and inst.language.lower() not in POSTGRES_NAMES:
        return BuiltCase(None, (f"skipped: written for {inst.language}, not PostgreSQL",))
    if not inst.sol_sql:
        return BuiltCase(None, ("skipped: no sol_sql (no gold to judge against)",))
    gold = join_statements(list(inst.sol_sql))
    problem = parse_problem(gold)
    if problem:
        return BuiltCase(None, (f"skipped: sol_sql does not parse with sqlglot: {problem}",))
    targets = find_write_targets([gold])
    category = inst.category or _inferred_category(inst)
    tags = list(dict.fromkeys([inst.db, category, *(["efficiency"] if inst.efficiency else [])]))
    case: dict[str, Any] = {"id": inst.id, "db": inst.db, "category": category, "tags": tags}
    case.update({"question": inst.question, "gold_sql": gold})
    if inst.preprocess_sql:
        case["setup_sql"] = list(inst.preprocess_sql)
    if inst.clean_up_sql:
        case["teardown_sql"] = list(inst.clean_up_sql)
    warnings: list[str] = []
    checks = table_checks(targets)
    unread = f" ({targets.unreadable} statement(s) sqlglot could not analyse)" if targets.unreadable else ""
    if category == "management":
        if checks:
            case["checks"] = checks
        else:
            warnings.append(
                f"no table written or dropped found in sol_sql{unread}, so no checks were derived"
            )
    elif category in READ_ONLY_CATEGORIES and checks:
        names = ", ".join(ref.sql for ref in (*targets.written, *targets.dropped))
        warnings.append(f"category {category} is run read-only, but sol_sql changes {names}")
    if category == "efficiency" or inst.efficiency:
        case["efficiency"] = _efficiency(inst)
    return BuiltCase(case, tuple(warnings))


def _inferred_category(inst: Instance) -> str:
    """For tasks without a category: efficiency when flagged, query when every statement is a query."""
    if inst.efficiency:
        return "efficiency"
    return "query" if all(is_query for _, is_query in query_flags(inst.sol_sql)) else "management"


def _efficiency(inst: Instance) -> dict[str, Any]:
    """Plan cost against the issue SQL; for a solution with no query (it adds an index, say), the issue's last
    query is also the one measured after the prediction ran."""
    block: dict[str, Any] = {}
    if inst.issue_sql:
        block["reference_sql"] = join_statements(list(inst.issue_sql))
    if not any(is_query for _, is_query in query_flags(inst.sol_sql)):
        issue_queries = [stmt for stmt, is_query in query_flags(inst.issue_sql) if is_query]
        if issue_queries:
            block["explain_sql"] = issue_queries[-1]
    block["threshold"] = 0.0
    return block


def find_dump(db_dir: Path, db: str) -> tuple[Path, ...]:
    """`<db>.sql`, else `<db>/<db>.sql`, else every `<db>/*.sql` in name order; () when there is none."""
    flat, nested = db_dir / f"{db}.sql", db_dir / db / f"{db}.sql"
    if flat.is_file():
        return (flat,)
    if nested.is_file():
        return (nested,)
    folder = db_dir / db
    return tuple(sorted(p for p in folder.glob("*.sql") if p.is_file())) if folder.is_dir() else ()


def _require_dump(db_dir: Path, inst: Instance, *, jsonl: Path) -> tuple[Path, ...]:
    files = find_dump(db_dir, inst.db)
    if not files:
        raise CaseFileError(
            f"no dump for db_id {inst.db!r} in {db_dir} (looked for {inst.db}.sql, {inst.db}/{inst.db}.sql, "
            f"{inst.db}/*.sql)",
            path=str(jsonl),
            line=inst.line,
            case_id=inst.id,
        )
    return files


def _test_cases_warning(ids: list[str]) -> str:
    shown = ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else "")
    return (
        f"{len(ids)} instance(s) carry Python test_cases, which sqlcanary cannot run; they are judged by the "
        f"gold's result and the derived checks instead: {shown}"
    )


def _fixture_paths(db: str, files: tuple[Path, ...]) -> dict[str, Path]:
    if len(files) == 1:
        return {f"fixtures/{db}.sql": files[0]}
    return {f"fixtures/{db}/{f.name}": f for f in files}


def _draft(by_db: dict[str, list[dict[str, Any]]], dumps: dict[str, tuple[Path, ...]]) -> SuiteDraft:
    copies: dict[str, Path] = {}
    databases: dict[str, str | list[str]] = {}
    for db in sorted(dumps):
        paths = _fixture_paths(db, dumps[db])
        copies.update(paths)
        databases[db] = next(iter(paths)) if len(paths) == 1 else list(paths)
    head = [
        "# BIRD-CRITIC, imported by `sqlcanary import bird-critic`.",
        "# Each case's gold is the task's whole sol_sql script; setup_sql/teardown_sql are its preprocess_sql and",
        "# clean_up_sql. Management cases carry checks derived from the tables the solution writes. BIRD-CRITIC's",
        "# Python test_cases are not imported: the gold's result and the checks judge the answer instead.",
    ]
    body = dump_yaml({"name": "bird-critic", "databases": databases})
    defaults = [
        "defaults:",
        "  # as BIRD-CRITIC's own harness: a 60 s statement timeout and 10,000 rows at most",
        "  statement_timeout: 60s",
        "  row_cap: 10000",
    ]
    texts = {"suite.yml": "\n".join(head) + "\n" + body + "\n".join(defaults) + "\n"}
    texts.update({f"cases/{db}.yml": dump_yaml(cases) for db, cases in sorted(by_db.items())})
    return SuiteDraft(texts=texts, copies=copies)
