"""What a perturbed copy should change, read from the gold (issue 18): the columns and constants of its
comparisons, joins, aggregates and ORDER BY, each on the real base table behind the alias (found by
`bot.scoring.perturb_columns`). Pure: no database; `bot.db.perturb` turns the targets into changes. Safety: see
`bot.scoring.perturb_sql` (the gold is untrusted).

Kinds, each with `table` (rendered identifiers, schema-qualified when the gold was) and `where` (the gold's other
WHERE/ON conjuncts over that table alone that pass the allowlist, ANDed, columns unqualified; None when none):
- "boundary": `column` compared with the constant `value` (=, <>, <, <=, >, >=, each end of BETWEEN, each item
  of IN (...), the literal prefix of [I]LIKE 'ab%'); `value` is a literal rendered by sqlglot.
- "period": the same comparison when the constant looks like a date/timestamp, or the column is wrapped in
  date_trunc/extract/date_part/to_char/a cast to a date type; `value` is the literal, or None (CURRENT_DATE - ...).
- "null": a column that is filtered (in a WHERE/ON conjunct or any comparison), joined, or aggregated
  (COUNT/AVG/SUM/MIN/MAX).
- "orphan": each side of a join equality (ON, WHERE, `col IN (SELECT col2 ...)`, a correlated `a.x = b.y`),
  with `partner` the other side: a row without a partner (this covers GROUP BY over a joined table: a parent
  without children is an empty group).
- "duplicate": every base table in a FROM/JOIN (`column` None: whole rows).
- "tie": a column that is an ORDER BY key (by name, output alias or position; window ORDER BY too).
CTE names and derived tables are no targets; an unqualified column belongs to the only source of its scope and
is skipped when the scope has several. Unparsable or odd SQL gives what could be found, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, build_scope

from bot.scoring.perturb_columns import base_tables, order_keys, own_columns, resolve_column, unwrap_column
from bot.scoring.perturb_sql import (
    conjuncts,
    ident,
    is_safe_condition,
    looks_temporal,
    parse_gold,
    render,
    safe_literal,
    unqualified,
)
from bot.scoring.perturb_values import boundary_values

__all__ = ["Target", "boundary_values", "perturb_targets"]

_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)
_AGGREGATES = (exp.Count, exp.Avg, exp.Sum, exp.Min, exp.Max)
_LIKE_WILDCARD = re.compile(r"[%_\\]")


@dataclass(frozen=True)
class Target:
    kind: str  # "boundary" | "null" | "duplicate" | "orphan" | "tie" | "period"
    table: str  # the real table as the gold names it (schema-qualified if it was), never an alias
    column: str | None  # the column to change (None for "duplicate": whole rows)
    value: str | None  # "boundary"/"period": the constant as a safe SQL literal rendered by sqlglot
    where: str | None  # a safe condition over `table` (columns unqualified) picking rows worth changing
    partner: tuple[str, str] | None = None  # "orphan": (table, column) on the other side of the join


@dataclass
class _Info:
    """One SELECT's base tables by alias, and its WHERE/ON conjuncts over one table that are safe to render."""

    scope: Scope
    tables: dict[str, str]
    conjuncts: list[exp.Expr]
    single: dict[str, list[tuple[exp.Expr, exp.Expr]]] = field(default_factory=dict)


_Ref = tuple[_Info, str, str]  # (scope info, alias, column as SQL)


def perturb_targets(gold_sql: str) -> tuple[Target, ...]:
    tree = parse_gold(gold_sql)
    if tree is None:
        return ()
    try:
        root = build_scope(tree)
    except (SqlglotError, RecursionError):
        return ()
    if root is None:
        return ()
    finder = _Finder()
    for scope in root.traverse():
        if isinstance(scope.expression, exp.Select):
            finder.scan(scope)
    return tuple(dict.fromkeys(finder.found))


class _Finder:
    def __init__(self) -> None:
        self.infos: dict[int, _Info] = {}
        self.found: list[Target] = []

    def info(self, scope: Scope) -> _Info:
        if id(scope) not in self.infos:
            self.infos[id(scope)] = self._build(scope)
        return self.infos[id(scope)]

    def _build(self, scope: Scope) -> _Info:
        tables = base_tables(scope)
        select = scope.expression
        roots = [select.args.get("where")] + [j.args.get("on") for j in select.args.get("joins") or []]
        parts = [
            c for r in roots if r is not None for c in conjuncts(r.this if isinstance(r, exp.Where) else r)
        ]
        info = _Info(scope, tables, parts)
        for conjunct in parts:
            owners = {resolve_column(c, scope) for c in conjunct.find_all(exp.Column)}
            owner = owners.pop() if len(owners) == 1 else None
            if owner and owner[0] is scope and not conjunct.find(exp.Query) and is_safe_condition(conjunct):
                info.single.setdefault(owner[1], []).append((conjunct, unqualified(conjunct)))
        return info

    def ref(self, column: exp.Column, scope: Scope) -> _Ref | None:
        owner = resolve_column(column, scope)
        return (self.info(owner[0]), owner[1], ident(column.this)) if owner else None

    def add(
        self,
        kind: str,
        ref: _Ref,
        value: str | None = None,
        *,
        near: exp.Expr | None = None,
        partner: _Ref | None = None,
    ) -> None:
        info, alias, column = ref
        where = _where(info, alias, _conjunct_of(near, info))
        other = (partner[0].tables[partner[1]], partner[2]) if partner else None
        self.found.append(
            Target(kind, info.tables[alias], None if kind == "duplicate" else column, value, where, other)
        )

    def scan(self, scope: Scope) -> None:
        info = self.info(scope)
        for alias in info.tables:
            self.add("duplicate", (info, alias, ""))
        for node in scope.walk():
            if isinstance(node, _COMPARISONS):
                self._compare(node, scope, node.this, node.expression)
                self._compare(node, scope, node.expression, node.this)
                if isinstance(node, exp.EQ):
                    self._join(node, scope, node.this, node.expression)
            elif isinstance(node, exp.Between):
                for end in (node.args.get("low"), node.args.get("high")):
                    self._compare(node, scope, node.this, end)
            elif isinstance(node, exp.In):
                self._in(node, scope)
            elif isinstance(node, exp.Like | exp.ILike):
                self._like(node, scope)
            elif isinstance(node, _AGGREGATES):
                for column in own_columns(node, scope):
                    self._null(column, scope, None)
        for conjunct in info.conjuncts:
            for column in own_columns(conjunct, scope):
                self._null(column, scope, conjunct)
        for key in order_keys(scope):
            found = unwrap_column(key)
            ref = self.ref(found[0], scope) if found else None
            if ref:
                self.add("tie", ref)

    def _null(self, column: exp.Column, scope: Scope, near: exp.Expr | None) -> None:
        ref = self.ref(column, scope)
        if ref:
            self.add("null", ref, near=near)

    def _compare(self, node: exp.Expr, scope: Scope, side: exp.Expr, other: exp.Expr | None) -> None:
        found = unwrap_column(side)
        if found is None or other is None or not _is_constant(other):
            return
        column, dated, same_domain = found
        ref = self.ref(column, scope)
        if ref is None:
            return
        value = safe_literal(other)
        if value is not None and same_domain:
            self.add("boundary", ref, value, near=node)
        if dated or looks_temporal(other):
            self.add("period", ref, value, near=node)
        self.add("null", ref, near=node)

    def _join(self, node: exp.Expr, scope: Scope, left: exp.Expr, right: exp.Expr) -> None:
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            return
        a, b = self.ref(left, scope), self.ref(right, scope)
        if a and b and a[:2] != b[:2]:
            self._pair(a, b, node)

    def _pair(self, a: _Ref, b: _Ref, near: exp.Expr) -> None:
        for this, other in ((a, b), (b, a)):
            self.add("null", this, near=near)
            self.add("orphan", this, near=near, partner=other)

    def _in(self, node: exp.In, scope: Scope) -> None:
        query = node.args.get("query")
        if query is None:
            for item in node.expressions:
                self._compare(node, scope, node.this, item)
            return
        inner = query.this if isinstance(query, exp.Subquery) else query
        if not (isinstance(inner, exp.Select) and len(inner.expressions) == 1):
            return
        out = inner.expressions[0].unalias()
        sub = next((s for s in scope.subquery_scopes if s.expression is inner), None)
        if isinstance(node.this, exp.Column) and isinstance(out, exp.Column) and sub is not None:
            a, b = self.ref(node.this, scope), self.ref(out, sub)
            if a and b:
                self._pair(a, b, node)

    def _like(self, node: exp.Expr, scope: Scope) -> None:
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            return
        prefix = _LIKE_WILDCARD.split(pattern.name, maxsplit=1)[0]
        self._compare(node, scope, node.this, exp.Literal.string(prefix) if prefix else exp.Null())


def _conjunct_of(node: exp.Expr | None, info: _Info) -> exp.Expr | None:
    ids = {id(c) for c in info.conjuncts}
    while node is not None and id(node) not in ids:
        node = node.parent
    return node


def _where(info: _Info, alias: str, exclude: exp.Expr | None) -> str | None:
    parts = [clean for conjunct, clean in info.single.get(alias, []) if conjunct is not exclude]
    return render(exp.and_(*parts, copy=True)) if parts else None


def _is_constant(node: exp.Expr) -> bool:
    return (
        not isinstance(node, exp.Null) and node.find(exp.Column, exp.Query, exp.Star, exp.Placeholder) is None
    )
