"""Every problem of a suite at once: unknown keys at every level (with the closest known key), each case built on
its own so that one bad case hides no other, duplicate ids; and whatever `load_suite` (what a run reads) says.
Nothing here touches a database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bot.base.errors import SqlcanaryError
from bot.base.yamlread import LineDict, LineList, load_yaml_file
from bot.cases.builder import CASE_KEYS, build_case
from bot.cases.loader import DEFAULT_KEYS, SUITE_FILE_NAMES, SUITE_KEYS, load_suite
from bot.cases.model import Check, CompareOptions, Efficiency
from bot.config.problems import Problem, unknown_keys

CASE_FILE_KEYS = ("cases", "defaults")
# Keys of a case whose value is a mapping of a model's fields.
NESTED: dict[str, type[BaseModel]] = {"compare": CompareOptions, "efficiency": Efficiency}


def problem_of(exc: SqlcanaryError, key: str = "") -> Problem:
    return Problem(exc.path or "", exc.line, key, exc.message, case_id=exc.case_id)


def _load(path: Path, out: list[Problem]) -> Any:
    try:
        return load_yaml_file(path)
    except SqlcanaryError as exc:
        out.append(problem_of(exc))
        return None


def _without(doc: LineDict, drop: set[str]) -> LineDict:
    """A copy of `doc` without the keys in `drop`, lines kept."""
    out = LineDict({k: v for k, v in doc.items() if k not in drop})
    out.line, out.key_lines = doc.line, dict(doc.key_lines)
    return out


def _nested_problems(
    raw: LineDict, *, path: str, prefix: str, case_id: str | None
) -> tuple[list[Problem], dict]:
    """Unknown keys inside `compare:` and `efficiency:`; the mapping with them left out."""
    out: list[Problem] = []
    fixed: dict[str, Any] = {}
    for key, model in NESTED.items():
        value = raw.get(key)
        if not isinstance(value, LineDict):
            continue
        found = unknown_keys(
            value, model.model_fields, path=path, prefix=f"{prefix}{key}.", within=f"`{key}`", case_id=case_id
        )
        out += found
        if found:
            fixed[key] = _without(value, {p.key.rsplit(".", 1)[-1] for p in found})
    return out, fixed


def _check_keys(raw: LineDict, *, path: str, prefix: str, case_id: str | None) -> list[Problem]:
    checks = raw.get("checks")
    out: list[Problem] = []
    for i, chk in enumerate(checks if isinstance(checks, list) else []):
        if isinstance(chk, LineDict):
            out += unknown_keys(
                chk,
                Check.model_fields,
                path=path,
                prefix=f"{prefix}checks[{i}].",
                within="a check",
                case_id=case_id,
            )
    return out


def _cases(
    items: Any, defaults: dict[str, Any], *, path: str, line: int, prefix: str, known_dbs: frozenset[str]
) -> list[tuple[Problem | None, str | None, str]]:
    """(a problem or None, the case id, its source) for each case; unknown-key problems come first."""
    if not isinstance(items, list):
        return [(Problem(path, line, prefix, "`cases` must be a list"), None, "")]
    out: list[tuple[Problem | None, str | None, str]] = []
    for i, raw in enumerate(items):
        key = f"{prefix}[{i}]"
        item_line = items.line_of(i) if isinstance(items, LineList) else line
        if not isinstance(raw, LineDict):
            out.append((Problem(path, item_line, key, "a case must be a mapping"), None, ""))
            continue
        case_id = str(raw.get("id", "")).strip() or None
        found = unknown_keys(raw, CASE_KEYS, path=path, prefix=f"{key}.", within="a case", case_id=case_id)
        found += _check_keys(raw, path=path, prefix=f"{key}.", case_id=case_id)
        nested, fixed = _nested_problems(raw, path=path, prefix=f"{key}.", case_id=case_id)
        found += nested
        out += [(p, case_id, "") for p in found]
        clean = _without(raw, {p.key.removeprefix(f"{key}.") for p in found})
        clean.update(fixed)
        try:
            case = build_case(clean, defaults, path=path, fallback_line=item_line, known_dbs=known_dbs)
        except SqlcanaryError as exc:
            said = any((p.path, p.line) == (exc.path, exc.line) for p in found)  # an unknown key of a check
            if not said and (known_dbs or not exc.message.startswith("unknown db")):
                out.append((problem_of(exc, key), case_id, ""))
            continue
        out.append((None, case.id, f"{key}.id={case.source}"))
    return out


def _suite_file(loc: Path) -> tuple[Path | None, list[Path], Problem | None]:
    if loc.is_dir():
        found = next((loc / n for n in SUITE_FILE_NAMES if (loc / n).is_file()), None)
        if found is None:
            return None, [], Problem(str(loc), None, "", f"no suite.yml in {loc}")
        folder = loc / "cases"
        files = sorted([*folder.rglob("*.yml"), *folder.rglob("*.yaml")]) if folder.is_dir() else []
        return found, files, None
    if loc.is_file():
        return loc, [], None
    return None, [], Problem(str(loc), None, "", "no such suite file or folder")


def _defaults(doc: LineDict, *, path: str, out: list[Problem]) -> dict[str, Any]:
    raw = doc.get("defaults")
    if not isinstance(raw, LineDict):
        return {}
    out += unknown_keys(raw, DEFAULT_KEYS, path=path, prefix="defaults.")
    compare = raw.get("compare")
    if isinstance(compare, LineDict):
        out += unknown_keys(compare, CompareOptions.model_fields, path=path, prefix="defaults.compare.")
    return {k: raw[k] for k in ("db", "tags", "category", "compare") if k in raw}


def _every_problem(loc: Path) -> list[Problem]:
    suite_file, case_files, missing = _suite_file(loc)
    if suite_file is None:
        return [missing] if missing else []
    out: list[Problem] = []
    spath = str(suite_file)
    doc = _load(suite_file, out)
    if not isinstance(doc, LineDict):
        return out or [Problem(spath, 1, "", "a suite file must be a mapping")]
    out += unknown_keys(doc, SUITE_KEYS, path=spath)
    dbs = doc.get("databases")
    known_dbs = frozenset(str(k) for k in dbs) if isinstance(dbs, dict) else frozenset()
    defaults = _defaults(doc, path=spath, out=out)
    if len(known_dbs) == 1:
        defaults.setdefault("db", next(iter(known_dbs)))
    results = []
    if "cases" in doc:
        line = doc.line_of("cases")
        results += _cases(doc["cases"], defaults, path=spath, line=line, prefix="cases", known_dbs=known_dbs)
    for cf in case_files:
        cpath = str(cf)
        cdoc = _load(cf, out)
        if cdoc is None:
            continue
        file_defaults = dict(defaults)
        items, line, prefix = cdoc, 1, ""
        if isinstance(cdoc, LineDict):
            out += unknown_keys(cdoc, CASE_FILE_KEYS, path=cpath)
            file_defaults.update(_defaults(cdoc, path=cpath, out=out))
            items, line, prefix = cdoc.get("cases", []), cdoc.line_of("cases"), "cases"
        results += _cases(items, file_defaults, path=cpath, line=line, prefix=prefix, known_dbs=known_dbs)
    seen: dict[str, str] = {}
    for problem, case_id, source in results:
        if problem is not None:
            out.append(problem)
        elif case_id in seen:
            key, _, where = source.partition("=")
            file, _, at = where.rpartition(":")
            message = f"duplicate case id (first defined at {seen[case_id]})"
            out.append(Problem(file, int(at), key, message, case_id=case_id))
        elif case_id is not None:
            seen[case_id] = source.partition("=")[2]
    return out


def suite_problems(location: str | Path) -> tuple[list[Problem], int | None]:
    """Every problem of the suite at `location`, and its number of cases when it has none."""
    loc = Path(location)
    try:
        return [], len(load_suite(loc).cases)
    except SqlcanaryError as exc:
        first = problem_of(exc)
    problems = _every_problem(loc)
    if not any(p.path == first.path and p.line == first.line for p in problems):
        problems.insert(0, first)
    return problems, None
