"""Reading one field of a suite or case file: a duration, a string or list of strings, SQL that must parse,
`compare` options; and the first error of a failed validation, in words. Errors name the file and the line."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError
from sqlglot.errors import ParseError, TokenError

from bot.base.errors import CaseFileError
from bot.base.yamlread import LineDict
from bot.cases.model import CompareOptions
from bot.cases.sqlparse import statement_count


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


def strings(value: Any, *, what: str, path: str, line: int) -> tuple[str, ...]:
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
        count = statement_count(sql)
    except (ParseError, TokenError) as exc:
        first = str(exc).splitlines()[0]
        raise CaseFileError(f"{what} does not parse: {first}", path=path, line=line, case_id=case_id) from exc
    if not count:
        raise CaseFileError(f"{what} is empty", path=path, line=line, case_id=case_id)
    return count


def compare_options(raw: Any, *, path: str, line: int, case_id: str | None) -> CompareOptions:
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


def first_loc(exc: Exception) -> str | None:
    if isinstance(exc, ValidationError) and exc.errors() and exc.errors()[0]["loc"]:
        return str(exc.errors()[0]["loc"][0])
    return None


def first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        return f"{where}: {err['msg']}" if where else err["msg"]
    return str(exc)
