"""Load a suite: a folder with suite.yml and cases/*.yml, or one YAML file with `databases:` and `cases:`.

Every error names the file, the line and, where there is one, the case id. One case is built by
bot.cases.builder; the cases a run takes are chosen by bot.cases.selection.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bot.base.errors import CaseFileError
from bot.base.fixture_files import fixture_digest
from bot.base.git import repo_root
from bot.base.yamlread import LineDict, LineList, load_yaml_file
from bot.cases.builder import build_case
from bot.cases.fields import compare_options, first_error, parse_duration_ms, strings
from bot.cases.model import Case, Suite, SuiteSettings

SUITE_FILE_NAMES = ("suite.yml", "suite.yaml")
SUITE_KEYS = {"name", "databases", "defaults", "cases", "description"}
DEFAULT_KEYS = {"db", "tags", "category", "compare", "statement_timeout", "row_cap", "perturb"}


def _read_cases(
    items: Any, defaults: dict[str, Any], *, path: str, line: int, known_dbs: frozenset[str]
) -> Iterable[Case]:
    if not isinstance(items, list):
        raise CaseFileError("`cases` must be a list", path=path, line=line)
    for i, raw in enumerate(items):
        item_line = items.line_of(i) if isinstance(items, LineList) else line
        yield build_case(raw, defaults, path=path, fallback_line=item_line, known_dbs=known_dbs)


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
        settings["compare"] = compare_options(
            raw.get("compare"), path=path, line=line_of("compare"), case_id=None
        )
        suite_settings = SuiteSettings(**settings)
    except (TypeError, ValidationError) as exc:
        raise CaseFileError(f"defaults: {first_error(exc)}", path=path, line=doc.line_of("defaults")) from exc
    case_defaults = {k: raw[k] for k in ("db", "tags", "category", "compare") if k in raw}
    if "perturb" in raw:
        case_defaults["perturb_default"] = raw["perturb"]
    return case_defaults, suite_settings


def _read_databases(
    doc: LineDict, *, base: Path, path: str
) -> tuple[dict[str, tuple[Path, ...]], dict[str, str]]:
    """Each database's fixture files, and the SHA-256 of each as read here (bot.cases.fixture_files)."""
    raw = doc.get("databases")
    if not isinstance(raw, dict) or not raw:
        raise CaseFileError(
            "`databases` must map each database name to a fixture .sql file or a list of them",
            path=path,
            line=doc.line_of("databases") if "databases" in doc else doc.line,
        )
    out: dict[str, tuple[Path, ...]] = {}
    digests: dict[str, str] = {}
    for name, files in raw.items():
        line = raw.line_of(name) if isinstance(raw, LineDict) else doc.line
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,40}", name):
            raise CaseFileError(f"database name {name!r} must be a plain identifier", path=path, line=line)
        paths = []
        for f in strings(files, what=f"databases.{name}", path=path, line=line):
            p = (base / f).resolve()
            if not p.is_file():
                raise CaseFileError(
                    f"fixture {f!r} of database {name!r} not found ({p})", path=path, line=line
                )
            paths.append(p)
            digests[str(p)] = fixture_digest(p, suite_file=path, line=line, db_label=name)
        out[name] = tuple(paths)
    return out, digests


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
    databases, fixture_digests = _read_databases(doc, base=suite_file.parent, path=spath)
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
        fixture_digests=fixture_digests,
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
