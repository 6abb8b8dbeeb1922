"""Gold SQL written for SQLite (Spider, BIRD) rewritten for PostgreSQL with sqlglot (read=sqlite, write=postgres),
and what could not be rewritten, or was rewritten in a way that may change the answer, said per case.

Rewritten, and noted: backtick and bracket identifiers; double-quoted strings (SQLite reads `"France"` as a
string when no column has that name; PostgreSQL never does); `LIMIT a, b`; `IIF`; `strftime`; LIKE, which is
case-insensitive in SQLite (-> ILIKE). Noted only: `||` (PostgreSQL does not turn numbers into text for it),
functions PostgreSQL may not have, and a column selected without being grouped or aggregated (SQLite picks a row,
PostgreSQL refuses). What sqlglot cannot transpile, or what does not parse as PostgreSQL after, is a problem: the
case is skipped and the reason reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from bot.cases.importers.common import parse_problem, quiet_sqlglot

_DQ = re.compile(r'"((?:[^"]|"")*)"')
_SQ = re.compile(r"'(?:[^']|'')*'")


@dataclass(frozen=True)
class Transpiled:
    sql: str | None  # None: cannot be used on PostgreSQL (see problem)
    notes: tuple[str, ...] = ()  # rewrites that may change the answer, and constructs to check by hand
    problem: str = ""


def _double_quoted(sql: str) -> set[str]:
    """The contents of the "double-quoted" tokens outside '...' strings."""
    return {m.group(1).replace('""', '"') for m in _DQ.finditer(_SQ.sub("''", sql))}


def _aliases(tree: exp.Expression) -> set[str]:
    names = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    names |= {t.alias.lower() for t in tree.find_all(exp.Table) if t.alias}
    names |= {c.alias.lower() for c in tree.find_all(exp.CTE) if c.alias}
    return names


def _strings_for_identifiers(
    tree: exp.Expression, quoted: set[str], known: set[str], notes: list[str]
) -> None:
    """SQLite's "France" where no column or table has the name: a string literal, as SQLite reads it."""
    names = known | _aliases(tree)
    for col in list(tree.find_all(exp.Column)):
        ident = col.this
        if (
            isinstance(ident, exp.Identifier)
            and ident.quoted
            and not col.table
            and ident.name in quoted
            and ident.name.lower() not in names
        ):
            col.replace(exp.Literal.string(ident.name))
            notes.append(
                f"\"{ident.name}\" is a string in SQLite (no column has that name): now '{ident.name}'"
            )


def _lowercase_names(tree: exp.Expression) -> None:
    """Names as the converted fixture spells them (lowercased; SQLite's names ignore case)."""
    for ident in tree.find_all(exp.Identifier):
        ident.set("this", ident.name.lower())


def _ungrouped(tree: exp.Expression) -> list[str]:
    out = []
    for select in tree.find_all(exp.Select):
        group = select.args.get("group")
        if not group:
            continue
        keys = {g.sql() for g in group.expressions}
        key_columns = {c.sql() for g in group.expressions for c in g.find_all(exp.Column)}
        for projection in select.expressions:
            inner = projection.this if isinstance(projection, exp.Alias) else projection
            if inner.sql() in keys or inner.find(exp.AggFunc) is not None:
                continue
            for col in inner.find_all(exp.Column):
                if col.sql() not in key_columns and col.find_ancestor(exp.AggFunc) is None:
                    out.append(col.sql())
    return sorted(set(out))


def _source_notes(sql: str, tree: exp.Expression) -> list[str]:
    notes = []
    if "`" in _SQ.sub("''", sql) or re.search(r"\[[^\]'\"]+\]", _SQ.sub("''", sql)):
        notes.append("backtick or bracket identifiers: rewritten as double-quoted names")
    if re.search(r"\blimit\s+\d+\s*,\s*\d+", sql, re.I):
        notes.append("`LIMIT a, b`: rewritten as `LIMIT b OFFSET a`")
    if any(
        f.name.upper() == "IIF" for f in tree.find_all(exp.Func) if isinstance(f, exp.Anonymous)
    ) or re.search(r"\biif\s*\(", sql, re.I):
        notes.append("`IIF`: rewritten as CASE")
    if re.search(r"\bstrftime\s*\(", sql, re.I):
        notes.append(
            "`strftime`: rewritten as TO_CHAR over a timestamp cast; the column must hold ISO dates, and a "
            "format PostgreSQL spells otherwise changes the result"
        )
    if tree.find(exp.DPipe) is not None:
        notes.append(
            "`||`: PostgreSQL does not turn numbers into text for it (SQLite does); cast them if needed"
        )
    return notes


def transpile_gold(sql: str, *, names: set[str]) -> Transpiled:
    """`sql` (SQLite) as PostgreSQL; `names`: the database's lowercased table and column names."""
    try:
        with quiet_sqlglot():
            trees = sqlglot.parse(sql, read="sqlite")
    except SqlglotError as exc:
        return Transpiled(None, problem=f"does not parse as SQLite: {_first_line(exc)}")
    found = [t for t in trees if isinstance(t, exp.Expression)]
    if len(found) != 1:
        return Transpiled(None, problem=f"{len(found)} statements: a gold is one query")
    tree = found[0]
    notes = _source_notes(sql, tree)
    _strings_for_identifiers(tree, _double_quoted(sql), names, notes)
    likes = list(tree.find_all(exp.Like))
    for like in likes:
        like.replace(exp.ILike(this=like.this, expression=like.expression))
    if likes:
        notes.append("LIKE is case-insensitive in SQLite: rewritten as ILIKE")
    _lowercase_names(tree)
    try:
        with quiet_sqlglot():
            out = tree.sql(dialect="postgres", unsupported_level=ErrorLevel.RAISE)
    except SqlglotError as exc:
        return Transpiled(None, tuple(notes), f"cannot be written for PostgreSQL: {_first_line(exc)}")
    unknown = sorted({f.name.upper() for f in tree.find_all(exp.Anonymous)})
    if unknown:
        notes.append(
            f"function{'s' * (len(unknown) > 1)} {', '.join(unknown)}: not rewritten, may not exist on PostgreSQL"
        )
    ungrouped = _ungrouped(tree)
    if ungrouped:
        notes.append(
            f"selects {', '.join(ungrouped)} without grouping or aggregating it: SQLite picks a row, PostgreSQL "
            "refuses the query"
        )
    problem = parse_problem(out)
    if problem:
        return Transpiled(None, tuple(notes), f"the PostgreSQL version does not parse: {problem}")
    return Transpiled(out, tuple(notes))


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
