"""Cross-reference checks: metrics against tables, snippets and dimensions; recipes and preferences."""

from __future__ import annotations

import re
import string

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from bot.kb.model import Metric
from bot.kb.read import DIMENSIONS_FILE, PREFERENCES_FILE, TABLES_FILE, Draft
from bot.kb.spans import SpanDict


def parse_sql(text: str) -> exp.Expr | None:
    try:
        return sqlglot.parse_one(text, read="postgres")
    except (ParseError, TokenError, ValueError):
        return None


def column_names(sql_fragment: str) -> set[str] | None:
    """Column names an expression or condition refers to; None when it does not parse."""
    tree = parse_sql(f"SELECT {sql_fragment}")
    if tree is None:
        return None
    inner = {c for sub in tree.find_all(exp.Subquery) for c in sub.find_all(exp.Column)}
    return {c.name for c in tree.find_all(exp.Column) if c not in inner}


def snippet_columns(draft: Draft) -> dict[str, set[str]]:
    """Output columns of each snippet (a SELECT); problems for snippets that do not parse."""
    out: dict[str, set[str]] = {}
    for name, (text, path) in draft.snippets.items():
        tree = parse_sql(text)
        if not isinstance(tree, exp.Query):
            draft.problem(path, 1, "a snippet must be one SELECT statement that parses as PostgreSQL")
            continue
        out[name] = set(tree.named_selects)
    return out


def _source_columns(draft: Draft, metric: Metric, snippets: dict[str, set[str]]) -> set[str] | None:
    if metric.snippet:
        return snippets.get(metric.snippet)
    if draft.tables and metric.table in draft.tables.tables:
        return set(draft.tables.tables[metric.table].columns)
    return None


def _check_source(
    draft: Draft, metric: Metric, path: str, doc: SpanDict, snippets: dict[str, set[str]]
) -> None:
    if metric.table and draft.tables:
        table = draft.tables.tables.get(metric.table)
        if table is None:
            draft.problem(
                path, doc.line_of("table"), f"table {metric.table!r} is not documented in {TABLES_FILE}"
            )
        elif table.deprecated:
            msg = f"table {metric.table!r} is marked deprecated in {TABLES_FILE}"
            draft.problem(path, doc.line_of("table"), msg, "warning")
    if metric.snippet and metric.snippet not in draft.snippets:
        draft.problem(path, doc.line_of("snippet"), f"no snippet file snippets/{metric.snippet}.sql")
    columns = _source_columns(draft, metric, snippets)
    if columns is None:
        return
    source = metric.table or f"snippet {metric.snippet}"
    fragments = [("expression", metric.expression or ""), ("time_column", metric.time_column or "")]
    fragments += [("filters", f) for f in metric.filters]
    for key, fragment in fragments:
        if fragment in ("", "*"):
            continue
        used = column_names(fragment)
        if used is None:
            draft.problem(path, doc.line_of(key), f"{key}: does not parse as SQL: {fragment!r}")
            continue
        for col in sorted(used - columns):
            draft.problem(path, doc.line_of(key), f"{key}: column {col!r} is not a column of {source}")
    if draft.dimensions:
        known = {d.name: d for d in draft.dimensions.dimensions}
        for dim in metric.dimensions:
            if dim in known and known[dim].column not in columns:
                msg = f"dimension {dim!r} needs column {known[dim].column!r}, which {source} lacks"
                draft.problem(path, doc.line_of("dimensions"), msg)


def _check_ratio(draft: Draft, metric: Metric, path: str, doc: SpanDict) -> None:
    parts: list[tuple[Metric, str, SpanDict]] = []
    for key in ("numerator", "denominator"):
        name = getattr(metric, key)
        part = draft.metrics.get(name)
        if part is None:
            draft.problem(path, doc.line_of(key), f"{key}: no metric named {name!r}")
        elif part[0].aggregation == "ratio":
            draft.problem(path, doc.line_of(key), f"{key}: {name!r} is itself a ratio")
        else:
            parts.append(part)
    sources = [(m.table, m.snippet, m.time_column) for m, _, _ in parts]
    if len(parts) == 2 and sources[0] != sources[1]:

        def where(part: tuple[Metric, str, SpanDict]) -> str:
            m, at, spans = part
            source = f"table {m.table}" if m.table else f"snippet {m.snippet}"
            line = spans.line_of("table" if m.table else "snippet")
            return f"{m.name!r} ({draft.shown(at)}:{line}) reads {source}, time column {m.time_column}"

        draft.problem(
            path,
            doc.line_of("denominator"),
            f"numerator and denominator must share a source and time column: {where(parts[0])}; "
            f"{where(parts[1])} (change both metrics together, or neither)",
        )


def check_metrics(draft: Draft) -> None:
    snippets = snippet_columns(draft)
    dim_names = {d.name for d in draft.dimensions.dimensions} if draft.dimensions else set()
    owners: dict[str, str] = {}
    for name, (metric, path, doc) in draft.metrics.items():
        if metric.aggregation == "ratio":
            _check_ratio(draft, metric, path, doc)
        else:
            _check_source(draft, metric, path, doc, snippets)
        if draft.dimensions:
            for dim in metric.dimensions:
                if dim not in dim_names:
                    draft.problem(
                        path, doc.line_of("dimensions"), f"unknown dimension {dim!r} (see {DIMENSIONS_FILE})"
                    )
        for syn in (name, *metric.synonyms):
            key = syn.casefold()
            if owners.get(key, name) != name:
                draft.problem(
                    path, doc.line_of("synonyms"), f"synonym {syn!r} also belongs to metric {owners[key]!r}"
                )
            owners.setdefault(key, name)


def check_dimensions(draft: Draft) -> None:
    if not draft.dimensions:
        return
    doc = draft.docs[DIMENSIONS_FILE]
    seen: set[str] = set()
    for i, dim in enumerate(draft.dimensions.dimensions):
        line = doc["dimensions"].line_of(i)
        if dim.name in seen:
            draft.problem(DIMENSIONS_FILE, line, f"duplicate dimension {dim.name!r}")
        seen.add(dim.name)
        values = [v.value for v in dim.values]
        if len(set(values)) != len(values):
            draft.problem(DIMENSIONS_FILE, line, f"dimension {dim.name!r} lists a value twice")
        names = [a.casefold() for v in dim.values for a in v.aliases] + [
            a.casefold() for g in dim.groups for a in (g.name, *g.aliases)
        ]
        if len(set(names)) != len(names):
            draft.problem(
                DIMENSIONS_FILE, line, f"dimension {dim.name!r} uses an alias for two values or groups"
            )
        for group in dim.groups:
            for member in sorted(set(group.members) - set(values)):
                draft.problem(
                    DIMENSIONS_FILE, line, f"group {group.name!r}: {member!r} is not a value of {dim.name!r}"
                )
    templates = [(t.name, t.sql) for t in draft.dimensions.time_grains]
    templates += [(f.name, f.sql) for f in draft.dimensions.day_filters]
    for name, sql in templates:
        if "{column}" not in sql:
            draft.problem(DIMENSIONS_FILE, None, f"{name}: `sql` must use {{column}}")


def _placeholders(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def check_recipes(draft: Draft) -> None:
    for recipe, path, doc in draft.recipes.values():
        wanted = _placeholders(recipe.sql)
        for i, pattern in enumerate(recipe.patterns):
            line = doc["patterns"].line_of(i)
            try:
                groups = set(re.compile(pattern).groupindex)
            except re.error as exc:
                draft.problem(path, line, f"pattern does not compile: {exc}")
                continue
            for name in sorted(wanted - groups):
                draft.problem(
                    path, line, f"the sql uses {{{name}}} but the pattern has no group (?P<{name}>...)"
                )


def check_preferences(draft: Draft) -> None:
    if not draft.preferences:
        return
    doc = draft.docs[PREFERENCES_FILE]
    tables = draft.tables.tables if draft.tables else {}
    for i, pref in enumerate(draft.preferences.preferences):
        line = doc["preferences"].line_of(i)
        try:
            re.compile(pref.when)
        except re.error as exc:
            draft.problem(PREFERENCES_FILE, line, f"{pref.name}: `when` does not compile: {exc}")
        for table in pref.add_filters:
            if tables and table not in tables:
                draft.problem(
                    PREFERENCES_FILE, line, f"{pref.name}: add_filters names unknown table {table!r}"
                )
