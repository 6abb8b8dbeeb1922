"""Load a suite: a folder with suite.yml and cases/*.yml, or one YAML file with `databases:` and `cases:`.

Every error names the file, the line and, where there is one, the case id.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import sqlglot
from pydantic import ValidationError
from sqlglot.errors import ParseError, TokenError

from bot.base.errors import CaseFileError
from bot.base.git import repo_root
from bot.base.yamlread import LineDict, LineList, load_yaml_file
from bot.cases.choices import expand_column_choices
from bot.cases.model import (
    READ_ONLY_CATEGORIES,
    Case,
    Category,
    Check,
    CompareOptions,
    Efficiency,
    Suite,
    SuiteSettings,
)

SUITE_FILE_NAMES = ("suite.yml", "suite.yaml")
CASE_KEYS = {
    "id",
    "question",
    "gold_sql",
    "expected_sql",
    "db",
    "tags",
    "category",
    "instructions",
    "setup_sql",
    "teardown_sql",
    "checks",
    "compare",
    "efficiency",
}
SUITE_KEYS = {"name", "databases", "defaults", "cases", "description"}
DEFAULT_KEYS = {"db", "tags", "category", "compare", "statement_timeout", "row_cap"}


def parse_duration_ms(value: Any, *, path: str, line: int | None) -> int:
    """`30s`, `500ms`, `2min` or a bare number of milliseconds."""
    if isinstance(value, bool):
        raise CaseFileError(f"not a duration: {value!r}", path=path, line=line)
    if isinstance(value, int | float):
        return int(value)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m)?\s*", str(value))
    if not m:
        raise CaseFileError(f"not a duration: {value!r} (write 30s, 500ms or 2min)", path=path, line=line)
    factor = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, None: 1}[m.group(2)]
    return int(float(m.group(1)) * factor)


def _strings(value: Any, *, what: str, path: str, line: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise CaseFileError(f"{what} must be a string or a list of strings", path=path, line=line)


def check_sql_parses(sql: str, *, path: str, line: int, case_id: str, what: str) -> int:
    """Raise CaseFileError unless `sql` parses; return how many statements it holds."""
    try:
        parsed = sqlglot.parse(sql, read="postgres")
    except (ParseError, TokenError) as exc:
        first = str(exc).splitlines()[0]
        raise CaseFileError(f"{what} does not parse: {first}", path=path, line=line, case_id=case_id) from exc
    count = sum(p is not None for p in parsed)
    if not count:
        raise CaseFileError(f"{what} is empty", path=path, line=line, case_id=case_id)
    return count


def _compare_options(raw: Any, *, path: str, line: int, case_id: str | None) -> CompareOptions:
    if raw is None:
        return CompareOptions()
    if not isinstance(raw, dict):
        raise CaseFileError("compare must be a mapping", path=path, line=line, case_id=case_id)
    try:
        return CompareOptions(**raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        where = raw.line_of(field) if isinstance(raw, LineDict) and field else line
        raise CaseFileError(f"compare.{field}: {err['msg']}", path=path, line=where, case_id=case_id) from exc


def _build_case(
    raw: Any, defaults: dict[str, Any], *, path: str, fallback_line: int, known_dbs: frozenset[str]
) -> Case:
    if not isinstance(raw, dict):
        raise CaseFileError("a case must be a mapping", path=path, line=fallback_line)
    line = raw.line if isinstance(raw, LineDict) else fallback_line
    line_of = raw.line_of if isinstance(raw, LineDict) else (lambda _k: line)
    case_id = str(raw.get("id", "")).strip() or None
    unknown = sorted(set(raw) - CASE_KEYS)
    if unknown:
        raise CaseFileError(
            f"unknown key {unknown[0]!r} (known: {', '.join(sorted(CASE_KEYS))})",
            path=path,
            line=line_of(unknown[0]),
            case_id=case_id,
        )
    if case_id is None:
        raise CaseFileError("a case needs an `id`", path=path, line=line)
    if "gold_sql" in raw and "expected_sql" in raw:
        raise CaseFileError("give gold_sql or expected_sql, not both", path=path, line=line, case_id=case_id)
    gold_key = "gold_sql" if "gold_sql" in raw else "expected_sql"
    gold_line = line_of(gold_key)
    gold_raw = _strings(raw.get(gold_key), what=gold_key, path=path, line=gold_line)
    merged = {**defaults, **{k: v for k, v in raw.items() if k not in (gold_key,)}}
    category = cast(Category, merged.get("category") or "query")  # the Case model validates it
    gold: list[str] = []
    for i, alt in enumerate(gold_raw):
        alt_line = raw[gold_key].line_of(i) if isinstance(raw.get(gold_key), LineList) else gold_line
        for variant in expand_column_choices(alt):
            count = check_sql_parses(variant, path=path, line=alt_line, case_id=case_id, what=gold_key)
            if count > 1 and category in READ_ONLY_CATEGORIES:
                raise CaseFileError(
                    f"{gold_key} holds {count} statements; a {category} case takes one query "
                    "(write acceptable alternatives as a YAML list)",
                    path=path,
                    line=alt_line,
                    case_id=case_id,
                )
            gold.append(variant)
    db = str(merged.get("db") or "")
    if db not in known_dbs:
        known = ", ".join(sorted(known_dbs))
        db_line = line_of("db") if "db" in raw else line
        raise CaseFileError(
            f"unknown db {db!r} (the suite defines: {known})", path=path, line=db_line, case_id=case_id
        )
    tags = _strings(merged.get("tags"), what="tags", path=path, line=line_of("tags"))
    checks_raw = merged.get("checks") or []
    if isinstance(checks_raw, str | dict):
        checks_raw = [checks_raw]
    checks = []
    for i, chk in enumerate(checks_raw):
        chk_line = checks_raw.line_of(i) if isinstance(checks_raw, LineList) else line_of("checks")
        try:
            checks.append(Check(sql=chk) if isinstance(chk, str) else Check(**chk))
        except (TypeError, ValidationError) as exc:
            raise CaseFileError(
                f"bad check: {_first_error(exc)}", path=path, line=chk_line, case_id=case_id
            ) from exc
        check_sql_parses(checks[-1].sql, path=path, line=chk_line, case_id=case_id, what="check sql")
    try:
        compare = _compare_options(raw.get("compare"), path=path, line=line_of("compare"), case_id=case_id)
        compare = compare.merged_over(
            _compare_options(defaults.get("compare"), path=path, line=line, case_id=case_id)
        )
        efficiency = Efficiency(**raw["efficiency"]) if raw.get("efficiency") else None
        case = Case(
            id=case_id,
            question=str(merged.get("question") or ""),
            gold_sql=tuple(gold),
            db=db,
            tags=tags,
            category=category,
            instructions=str(merged.get("instructions") or ""),
            setup_sql=_strings(
                merged.get("setup_sql"), what="setup_sql", path=path, line=line_of("setup_sql")
            ),
            teardown_sql=_strings(
                merged.get("teardown_sql"), what="teardown_sql", path=path, line=line_of("teardown_sql")
            ),
            checks=tuple(checks),
            compare=compare,
            efficiency=efficiency,
            source=f"{path}:{line}",
        )
    except (TypeError, ValidationError) as exc:
        field = _first_loc(exc)
        raise CaseFileError(
            f"{_first_error(exc)}", path=path, line=line_of(field) if field else line, case_id=case_id
        ) from exc
    if not case.question.strip():
        raise CaseFileError("a case needs a `question`", path=path, line=line, case_id=case_id)
    if not case.gold_sql and not case.checks:
        raise CaseFileError(
            "a case needs gold_sql (or checks, for writes)", path=path, line=line, case_id=case_id
        )
    if case.category == "efficiency" and case.efficiency is None:
        case = case.model_copy(update={"efficiency": Efficiency()})
    return case


def _first_loc(exc: Exception) -> str | None:
    if isinstance(exc, ValidationError) and exc.errors() and exc.errors()[0]["loc"]:
        return str(exc.errors()[0]["loc"][0])
    return None


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        return f"{where}: {err['msg']}" if where else err["msg"]
    return str(exc)


def _read_cases(
    items: Any, defaults: dict[str, Any], *, path: str, line: int, known_dbs: frozenset[str]
) -> Iterable[Case]:
    if not isinstance(items, list):
        raise CaseFileError("`cases` must be a list", path=path, line=line)
    for i, raw in enumerate(items):
        item_line = items.line_of(i) if isinstance(items, LineList) else line
        yield _build_case(raw, defaults, path=path, fallback_line=item_line, known_dbs=known_dbs)


def _read_defaults(doc: LineDict, *, path: str) -> tuple[dict[str, Any], SuiteSettings]:
    raw = doc.get("defaults") or {}
    if not isinstance(raw, dict):
        raise CaseFileError("`defaults` must be a mapping", path=path, line=doc.line_of("defaults"))
    line_of = raw.line_of if isinstance(raw, LineDict) else (lambda _k: doc.line_of("defaults"))
    unknown = sorted(set(raw) - DEFAULT_KEYS)
    if unknown:
        raise CaseFileError(
            f"unknown key {unknown[0]!r} in defaults (known: {', '.join(sorted(DEFAULT_KEYS))})",
            path=path,
            line=line_of(unknown[0]),
        )
    settings: dict[str, Any] = {}
    if "statement_timeout" in raw:
        settings["statement_timeout_ms"] = parse_duration_ms(
            raw["statement_timeout"], path=path, line=line_of("statement_timeout")
        )
    if "row_cap" in raw:
        settings["row_cap"] = raw["row_cap"]
    try:
        settings["compare"] = _compare_options(
            raw.get("compare"), path=path, line=line_of("compare"), case_id=None
        )
        suite_settings = SuiteSettings(**settings)
    except (TypeError, ValidationError) as exc:
        raise CaseFileError(
            f"defaults: {_first_error(exc)}", path=path, line=doc.line_of("defaults")
        ) from exc
    case_defaults = {k: raw[k] for k in ("db", "tags", "category", "compare") if k in raw}
    return case_defaults, suite_settings


def _read_databases(doc: LineDict, *, base: Path, path: str) -> dict[str, tuple[Path, ...]]:
    raw = doc.get("databases")
    if not isinstance(raw, dict) or not raw:
        raise CaseFileError(
            "`databases` must map each database name to a fixture .sql file or a list of them",
            path=path,
            line=doc.line_of("databases") if "databases" in doc else doc.line,
        )
    out: dict[str, tuple[Path, ...]] = {}
    for name, files in raw.items():
        line = raw.line_of(name) if isinstance(raw, LineDict) else doc.line
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,40}", name):
            raise CaseFileError(f"database name {name!r} must be a plain identifier", path=path, line=line)
        paths = []
        for f in _strings(files, what=f"databases.{name}", path=path, line=line):
            p = (base / f).resolve()
            if not p.is_file():
                raise CaseFileError(
                    f"fixture {f!r} of database {name!r} not found ({p})", path=path, line=line
                )
            paths.append(p)
        out[name] = tuple(paths)
    return out


def _case_files(root: Path) -> list[Path]:
    folder = root / "cases"
    if not folder.is_dir():
        return []
    return sorted([*folder.rglob("*.yml"), *folder.rglob("*.yaml")])


def load_suite(location: str | Path) -> Suite:
    """Load and validate a suite folder or a single-file suite."""
    loc = Path(location)
    if loc.is_dir():
        suite_file = next((loc / n for n in SUITE_FILE_NAMES if (loc / n).is_file()), None)
        if suite_file is None:
            raise CaseFileError(f"no suite.yml in {loc}", path=str(loc))
        case_files = _case_files(loc)
    elif loc.is_file():
        suite_file, case_files = loc, []
    else:
        raise CaseFileError("no such suite file or folder", path=str(loc))
    spath = str(suite_file)
    doc = load_yaml_file(suite_file)
    if not isinstance(doc, LineDict):
        raise CaseFileError("a suite file must be a mapping", path=spath, line=1)
    unknown = sorted(set(doc) - SUITE_KEYS)
    if unknown:
        raise CaseFileError(
            f"unknown key {unknown[0]!r} (known: {', '.join(sorted(SUITE_KEYS))})",
            path=spath,
            line=doc.line_of(unknown[0]),
        )
    databases = _read_databases(doc, base=suite_file.parent, path=spath)
    defaults, settings = _read_defaults(doc, path=spath)
    if len(databases) == 1:
        defaults.setdefault("db", next(iter(databases)))
    cases: list[Case] = []
    if "cases" in doc:
        cases.extend(
            _read_cases(
                doc["cases"], defaults, path=spath, line=doc.line_of("cases"), known_dbs=frozenset(databases)
            )
        )
    for cf in case_files:
        cpath = str(cf)
        cdoc = load_yaml_file(cf)
        if cdoc is None:
            continue
        file_defaults = dict(defaults)
        if isinstance(cdoc, LineDict):
            extra = sorted(set(cdoc) - {"cases", "defaults"})
            if extra:
                raise CaseFileError(
                    f"unknown key {extra[0]!r} (a case file holds `cases:` and optional `defaults:`)",
                    path=cpath,
                    line=cdoc.line_of(extra[0]),
                )
            more, _ = _read_defaults(cdoc, path=cpath)
            file_defaults.update(more)
            items, line = cdoc.get("cases", []), cdoc.line_of("cases")
        else:
            items, line = cdoc, 1
        cases.extend(_read_cases(items, file_defaults, path=cpath, line=line, known_dbs=frozenset(databases)))
    _check_cases(cases, databases)
    cases = _sources_from_repository_root(cases, suite_file.parent)
    files = [suite_file, *case_files]
    fixtures = sorted({p for ps in databases.values() for p in ps})
    return Suite(
        name=str(doc.get("name") or (loc.name if loc.is_dir() else loc.stem)),
        root=suite_file.parent.resolve(),
        databases=databases,
        settings=settings,
        cases=tuple(cases),
        content_hash=hash_files([*files, *fixtures], base=suite_file.parent),
        files=tuple(files),
        location=loc.resolve(),
    )


def _sources_from_repository_root(cases: list[Case], folder: Path) -> list[Case]:
    """Case sources as `path:line` with the path relative to the repository root (the form GitHub annotations
    and reports need, the same from any current folder and in any worktree); left as given outside git."""
    repo = repo_root(folder)
    if repo is None:
        return cases
    out = []
    for case in cases:
        path, _, line = case.source.rpartition(":")
        try:
            rel = Path(path).resolve().relative_to(repo).as_posix()
        except ValueError:
            out.append(case)
            continue
        out.append(case.model_copy(update={"source": f"{rel}:{line}"}))
    return out


def _check_cases(cases: list[Case], databases: dict[str, tuple[Path, ...]]) -> None:
    seen: dict[str, str] = {}
    for case in cases:
        path, _, line = case.source.rpartition(":")
        if case.id in seen:
            raise CaseFileError(
                f"duplicate case id (first defined at {seen[case.id]})",
                path=path,
                line=int(line),
                case_id=case.id,
            )
        seen[case.id] = case.source
        if case.db not in databases:
            known = ", ".join(sorted(databases))
            raise CaseFileError(
                f"unknown db {case.db!r} (the suite defines: {known})",
                path=path,
                line=int(line),
                case_id=case.id,
            )


def hash_files(paths: Iterable[Path], *, base: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(set(paths)):
        try:
            rel = str(p.resolve().relative_to(base.resolve()))
        except ValueError:
            rel = p.name
        h.update(rel.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def select_cases(
    cases: Iterable[Case], *, tags: list[str] | None = None, ids: list[str] | None = None
) -> list[Case]:
    """Filter by tags (any match) and by ids (exact id, or a glob such as `shop-ads-*`)."""
    import fnmatch

    out = []
    for case in cases:
        if tags and not set(tags) & set(case.tags):
            continue
        if ids and not any(case.id == i or fnmatch.fnmatchcase(case.id, i) for i in ids):
            continue
        out.append(case)
    return out
