"""What every importer shares: the report, YAML that round-trips, SQL splitting, and an atomic suite write.

An importer builds a `SuiteDraft` in memory (texts and files to copy, by path relative to the suite), then
`publish_suite` writes it to a temporary folder beside `out`, checks that `load_suite` accepts it, and only then
swaps it into place. A failure midway leaves `out` as it was.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bot.base.errors import CaseFileError
from bot.cases.fields import check_sql_parses
from bot.cases.loader import load_suite
from bot.cases.sqltext import skip_quoted

IMPORT_MARKER = ".sqlcanary-import.json"


@dataclass(frozen=True)
class ImportReport:
    """What an import wrote: the suite folder, how many cases, which databases, and what it had to say."""

    suite_dir: Path
    cases: int
    databases: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True)
class SuiteDraft:
    """A suite not yet on disk: file texts and files to copy, keyed by path relative to the suite folder."""

    texts: Mapping[str, str]
    copies: Mapping[str, Path] = field(default_factory=dict)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as `|` block scalars when YAML allows it (PyYAML falls back to quoting otherwise)."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """YAML that loads back to exactly `data` (key order kept, no line folding)."""
    return yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1_000_000, default_flow_style=False
    )


def split_statements(sql: str) -> list[str]:
    """Split on `;` outside quotes, dollar quotes and comments; strip each part and drop empty ones."""
    parts, start, i, n = [], 0, 0, len(sql)
    while i < n:
        i, is_semicolon = _skip_token(sql, i)
        if is_semicolon:
            parts.append(sql[start : i - 1])
            start = i
    parts.append(sql[start:])
    return [p.strip() for p in parts if p.strip()]


def _skip_token(sql: str, i: int) -> tuple[int, bool]:
    """The index after the token at `i`, and whether that token was a `;`."""
    skipped = skip_quoted(sql, i)
    if skipped is not None:
        return skipped, False
    return i + 1, sql[i] == ";"


def join_statements(statements: list[str]) -> str:
    """Statements as one script: each but the last ends with `;` (on its own line after a `--` comment)."""
    cleaned = [s.strip().rstrip(";").rstrip() for s in statements]
    cleaned = [s for s in cleaned if s]
    out = []
    for k, stmt in enumerate(cleaned):
        if k == len(cleaned) - 1:
            out.append(stmt)
        elif "--" in stmt.rsplit("\n", 1)[-1]:
            out.append(stmt + "\n;")
        else:
            out.append(stmt + ";")
    return "\n".join(out)


@contextmanager
def quiet_sqlglot() -> Iterator[None]:
    """sqlglot logs a warning when it falls back to a Command; importers report what matters themselves."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def parse_problem(sql: str) -> str | None:
    """Why the loader would reject this gold SQL, or None when it parses."""
    try:
        with quiet_sqlglot():
            check_sql_parses(sql, path="", line=0, case_id="", what="sql")
    except CaseFileError as exc:
        return exc.message
    return None


def ensure_replaceable(out: Path) -> None:
    """Refuse an `out` that exists and holds something other than an earlier import."""
    if not out.exists() and not out.is_symlink():
        return
    if not out.is_dir():
        raise CaseFileError("the output exists and is not a folder", path=str(out))
    if (out / IMPORT_MARKER).is_file() or not any(out.iterdir()):
        return
    raise CaseFileError(
        f"the output folder is not empty and is not an earlier import (no {IMPORT_MARKER}); "
        "give a new or empty folder",
        path=str(out),
    )


def publish_suite(draft: SuiteDraft, out: Path, *, importer: str, source: Path) -> None:
    """Write the draft beside `out`, check that it loads, then swap it into place."""
    out = Path(os.path.abspath(out))
    ensure_replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".importing", dir=out.parent))
    try:
        os.chmod(staging, 0o755)
        _write_draft(draft, staging)
        marker = {"importer": importer, "source": str(source.resolve())}
        (staging / IMPORT_MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        _check_loads(staging)
        _swap_into_place(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write_draft(draft: SuiteDraft, root: Path) -> None:
    for rel, text in draft.texts.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for rel, src in draft.copies.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(src, target)
        except OSError as exc:
            raise CaseFileError(f"cannot copy: {exc.strerror or exc}", path=str(src)) from exc


def _check_loads(root: Path) -> None:
    try:
        with quiet_sqlglot():
            load_suite(root)
    except CaseFileError as exc:
        where = exc.path.replace(str(root), "<suite>") if exc.path else "<suite>"
        detail = CaseFileError(exc.message, path=where, line=exc.line, case_id=exc.case_id)
        raise CaseFileError(f"the imported suite would not load (an importer bug): {detail}") from exc


def _swap_into_place(staging: Path, out: Path) -> None:
    if not out.exists():
        staging.rename(out)
        return
    old = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.replaced")
    out.rename(old)
    try:
        staging.rename(out)
    except OSError:
        old.rename(out)
        raise
    shutil.rmtree(old, ignore_errors=True)
