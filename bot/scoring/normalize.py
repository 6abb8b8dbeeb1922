"""sqlglot normalisation passes for the structural scorer: a tuple of small rules, each guarded.

Modelled on sqlglot's optimizer (a tuple of rules applied in order). Every pass takes a parsed statement and
a `PassContext` and returns the rewritten statement (it may mutate it). `run_passes` applies them to a copy;
a pass that raises is skipped and named, so a verdict always comes out. No pass is exponential (no CNF/DNF).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.canonicalize import canonicalize
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.qualify_tables import qualify_tables
from sqlglot.optimizer.scope import Scope, build_scope
from sqlglot.optimizer.simplify import simplify

DIALECT = "postgres"
_SAFE_NAME = re.compile(r"[a-z_][a-z0-9_$]*")
_MIRROR: dict[type, type] = {exp.EQ: exp.EQ, exp.NEQ: exp.NEQ, exp.GT: exp.LT, exp.LT: exp.GT}
_MIRROR |= {exp.GTE: exp.LTE, exp.LTE: exp.GTE}
_CONSTANTS = (exp.Literal, exp.Null, exp.Boolean)
SIMPLIFY_MAX_NODES = 2500


@dataclass(frozen=True)
class PassContext:
    """What the passes read: the live schema (a sqlglot MappingSchema, or None) and the columns each table is
    seen with in either query; `notes` collects soft problems (a column the schema cannot resolve)."""

    schema: Any = None
    known_columns: dict[str, frozenset[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


Pass = Callable[["exp.Expr", PassContext], "exp.Expr"]


def from_clause(select: exp.Expr) -> exp.From | None:
    """The FROM of a SELECT (the arg is `from_` in sqlglot >= 28, `from` before)."""
    node = select.args.get("from_") or select.args.get("from")
    return node if isinstance(node, exp.From) else None


def inline_ctes(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """Replace a non-recursive CTE used exactly once by a derived table, so `WITH t AS (...)` equals inline."""
    with_ = expr.args.get("with_") or expr.args.get("with")
    if not isinstance(with_, exp.With) or with_.args.get("recursive"):
        return expr
    for cte in list(with_.expressions):
        refs = [
            t
            for t in expr.find_all(exp.Table)
            if not t.args.get("db") and t.name == cte.alias and not _inside(t, cte)
        ]
        if len(refs) != 1:
            continue
        ref = refs[0]
        ref.replace(
            exp.Subquery(
                this=cte.this.copy(), alias=exp.TableAlias(this=exp.to_identifier(ref.alias_or_name))
            )
        )
        cte.pop()
    if not with_.expressions:
        with_.pop()
    return expr


def _inside(node: exp.Expr, ancestor: exp.Expr) -> bool:
    parent = node.parent
    while parent is not None:
        if parent is ancestor:
            return True
        parent = parent.parent
    return False


def qualify_query(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """Qualify tables and columns (expanding stars only with the live schema), normalising identifiers."""
    if ctx.schema is not None:
        try:
            return qualify(expr.copy(), dialect=DIALECT, schema=ctx.schema, quote_identifiers=False)
        except SqlglotError as exc:
            ctx.notes.append(f"qualify_lenient: {exc}".splitlines()[0])
            return qualify(
                expr,
                dialect=DIALECT,
                schema=ctx.schema,
                quote_identifiers=False,
                validate_qualify_columns=False,
                allow_partial_qualification=True,
            )
    try:
        return qualify(
            expr.copy(),
            dialect=DIALECT,
            quote_identifiers=False,
            validate_qualify_columns=False,
            expand_stars=False,
        )
    except SqlglotError:
        # Correlated subqueries with unqualified columns cannot be resolved without a schema: tables only.
        return qualify_tables(normalize_identifiers(expr, dialect=DIALECT), dialect=DIALECT)


def normalize_names(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """Lower-case unquoted identifiers (PostgreSQL folding); idempotent after qualify."""
    return normalize_identifiers(expr, dialect=DIALECT)


def unquote_identifiers(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """`"orders"` is `orders` once folded: drop quotes that do not change the meaning."""
    for ident in expr.find_all(exp.Identifier):
        if ident.quoted and _SAFE_NAME.fullmatch(ident.name):
            ident.set("quoted", False)
    return expr


def drop_default_schema(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """`public.orders` is `orders`."""
    for table in expr.find_all(exp.Table):
        if (
            table.args.get("db") is not None
            and table.text("db") == "public"
            and not table.args.get("catalog")
        ):
            table.set("db", None)
    return expr


def resolve_columns(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """Qualify a bare column sqlglot left alone: by the one visible source known to have it (columns seen
    qualified in either query, or a derived table's outputs), else by the only source of its own scope."""
    root = build_scope(expr)
    if root is None:
        return expr
    for scope in root.traverse():
        outputs = {e.alias for e in scope.expression.expressions if isinstance(e, exp.Alias)}
        for column in scope.unqualified_columns:
            in_group = isinstance(column.parent, exp.Group)
            if (
                in_group
                and column.name in outputs
                and not _owner(scope, column.name, ctx.known_columns, True)
            ):
                continue  # GROUP BY an output name no table is known to have: resolve_order_refs takes it
            owner = _owner(scope, column.name, ctx.known_columns)
            if owner:
                column.set("table", exp.to_identifier(owner))
    return expr


def _owner(scope: Scope, name: str, known: dict[str, frozenset[str]], known_only: bool = False) -> str | None:
    current: Scope | None = scope
    while current is not None:
        owners = [alias for alias, source in current.sources.items() if name in _columns_of(source, known)]
        if len(owners) == 1:
            return owners[0]
        if owners:
            return None
        current = current.parent
    return next(iter(scope.sources)) if len(scope.sources) == 1 and not known_only else None


def _columns_of(source: exp.Expr | Scope, known: dict[str, frozenset[str]]) -> frozenset[str]:
    if isinstance(source, exp.Table):
        return known.get(source.name, frozenset())
    if isinstance(source, Scope) and isinstance(source.expression, exp.Select):
        return frozenset(source.expression.named_selects)
    return frozenset()


def drop_redundant_aliases(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """`orders.id AS id` is `orders.id`; sqlglot's generated `_col_0` names carry nothing either."""
    for alias in list(expr.find_all(exp.Alias)):
        target = alias.this
        if alias.alias.startswith("_col_") or (isinstance(target, exp.Column) and target.name == alias.alias):
            alias.replace(target)
    return expr


def resolve_order_refs(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """ORDER BY / GROUP BY a position or an output name: the output expression itself. (A GROUP BY name
    still bare here is no known input column: PostgreSQL then reads it as the output name.)"""
    for select in expr.find_all(exp.Select):
        outputs = select.expressions
        aliases = {e.alias: e.unalias() for e in outputs if isinstance(e, exp.Alias)}
        keys = [o.this for o in (select.args.get("order") or exp.Order()).expressions]
        keys += list((select.args.get("group") or exp.Group()).expressions)
        for key in keys:
            target = None
            if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.name) <= len(outputs):
                target = outputs[int(key.name) - 1].unalias()
            elif isinstance(key, exp.Column) and not key.table and key.name in aliases:
                target = aliases[key.name]
            if target is not None:
                key.replace(target.copy())
    return expr


def unalias_tables(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """Make table aliases irrelevant: a table is named by itself (`orders`, `orders_2` for a self-join),
    a derived table by its position (`_sub1`)."""
    root = build_scope(expr)
    if root is None:
        return expr
    scopes = list(root.traverse())
    renames = {id(scope): _rename_sources(scope, n) for n, scope in enumerate(reversed(scopes), 1)}
    done: set[int] = set()
    for scope in scopes:  # innermost first, so a correlated column is renamed by its own scope
        for column in scope.columns:
            if id(column) in done or not column.table:
                continue
            done.add(id(column))
            new = _lookup(scope, column.table, renames)
            if new:
                column.set("table", exp.to_identifier(new))
    return expr


def _rename_sources(scope: Scope, scope_no: int) -> dict[str, str]:
    select = scope.expression
    frm = from_clause(select) if isinstance(select, exp.Select) else None
    if frm is None:
        return {}
    nodes = [frm.this] + [j.this for j in select.args.get("joins") or []]
    renames: dict[str, str] = {}
    seen: dict[str, int] = {}
    subs = 0
    for node in nodes:
        if isinstance(node, exp.Table) and node.name:
            seen[node.name] = seen.get(node.name, 0) + 1
            new = node.name if seen[node.name] == 1 else f"{node.name}_{seen[node.name]}"
        elif isinstance(node, exp.Subquery) and node.alias:
            subs += 1
            new = f"_sub{scope_no}_{subs}" if scope_no > 1 else f"_sub{subs}"
        else:
            continue
        renames[node.alias_or_name] = new
        _set_alias(node, new)
    return renames


def _set_alias(node: exp.Expr, new: str) -> None:
    alias = node.args.get("alias")
    if isinstance(node, exp.Table) and new == node.name and (alias is None or not alias.columns):
        node.set("alias", None)
    elif isinstance(alias, exp.TableAlias):
        alias.set("this", exp.to_identifier(new))
    else:
        node.set("alias", exp.TableAlias(this=exp.to_identifier(new)))


def _lookup(scope: Scope | None, name: str, renames: dict[int, dict[str, str]]) -> str | None:
    while scope is not None:
        if name in renames.get(id(scope), {}):
            return renames[id(scope)][name]
        scope = scope.parent
    return None


def canonicalize_query(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    return canonicalize(expr, dialect=DIALECT)


class PassTooCostly(Exception):
    """Raised by a pass that declines a tree too large for it; the pass is then skipped and named."""


def simplify_query(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """Fold constants, drop `1 = 1`, rewrite BETWEEN as a range, sort conjuncts, put literals on the right.
    sqlglot's simplify is superlinear on long boolean chains: very large trees skip it."""
    if sum(1 for _ in expr.walk()) > SIMPLIFY_MAX_NODES:
        raise PassTooCostly(f"more than {SIMPLIFY_MAX_NODES} nodes")
    return simplify(expr, dialect=DIALECT)


def orient_comparisons(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """`3 < x` is `x > 3`; `b.id = a.id` is `a.id = b.id`: constants right, otherwise operands sorted."""
    nodes: list[exp.Expr] = list(expr.find_all(*_MIRROR, bfs=False))
    for node in reversed(nodes):
        left, right = node.this, node.expression
        if left is None or right is None:
            continue
        if _side_key(right) < _side_key(left):
            node.replace(_MIRROR[type(node)](this=right, expression=left))
    return expr


def _side_key(node: exp.Expr) -> tuple[bool, str]:
    return (isinstance(node, _CONSTANTS), node.sql(dialect=DIALECT))


def sort_connectors(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """AND / OR operands in a canonical order, innermost chains first."""
    chains = [n for n in expr.find_all(exp.And, exp.Or, bfs=False) if type(n.parent) is not type(n)]
    for head in reversed(chains):
        operands = sorted(head.flatten(), key=lambda n: n.sql(dialect=DIALECT))
        kind = type(head)
        head.replace(reduce(lambda a, b: kind(this=a, expression=b), operands))
    return expr


def sort_in_lists(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """`x IN ('b', 'a')` is `x IN ('a', 'b')`."""
    for node in expr.find_all(exp.In):
        if node.expressions:
            node.set("expressions", sorted(node.expressions, key=lambda n: n.sql(dialect=DIALECT)))
    return expr


PASSES: tuple[tuple[str, Pass], ...] = (
    ("inline_ctes", inline_ctes),
    ("qualify", qualify_query),
    ("normalize_names", normalize_names),
    ("unquote_identifiers", unquote_identifiers),
    ("drop_default_schema", drop_default_schema),
    ("resolve_columns", resolve_columns),
    ("resolve_order_refs", resolve_order_refs),
    ("unalias_tables", unalias_tables),
    ("drop_redundant_aliases", drop_redundant_aliases),
    ("canonicalize", canonicalize_query),
    ("simplify", simplify_query),
    ("orient_comparisons", orient_comparisons),
    ("sort_in_lists", sort_in_lists),
    ("sort_connectors", sort_connectors),
)


def run_passes(
    expr: exp.Expr, ctx: PassContext, passes: tuple[tuple[str, Pass], ...] | None = None
) -> tuple[exp.Expr, tuple[str, ...]]:
    """Apply the passes (default PASSES) in order; return the result and the names of the passes that raised.

    Passes mutate in place, so after a failure the earlier passes are replayed on a fresh copy (copying the
    tree before every pass would cost more than all the passes on a large query)."""
    rules = PASSES if passes is None else passes
    skipped: list[str] = []
    current = expr.copy()
    for position, (name, rule) in enumerate(rules):
        try:
            current = rule(current, ctx)
        except PassTooCostly:  # raised before touching the tree
            skipped.append(name)
        except Exception:  # noqa: BLE001 - a failing pass is skipped and named, never fatal
            skipped.append(name)
            current = expr.copy()
            for earlier, replay in rules[:position]:
                if earlier not in skipped:
                    current = replay(current, ctx)
    return current, tuple(skipped)


def known_columns(*statements: exp.Expr) -> dict[str, frozenset[str]]:
    """Columns each base table is seen with across the statements: `o.total` with `orders o`, and bare
    columns of a single-table SELECT (outside GROUP BY / ORDER BY keys, which may name outputs)."""
    seen: dict[str, set[str]] = {}
    for statement in statements:
        tree = normalize_identifiers(statement.copy(), dialect=DIALECT)
        aliases = {t.alias_or_name: t.name for t in tree.find_all(exp.Table) if t.name}
        for column in tree.find_all(exp.Column):
            if column.table in aliases and column.name:
                seen.setdefault(aliases[column.table], set()).add(column.name)
        for select in tree.find_all(exp.Select):
            frm = from_clause(select)
            if frm is None or not isinstance(frm.this, exp.Table) or select.args.get("joins"):
                continue
            for node in iter_own_nodes(select):
                if (
                    isinstance(node, exp.Column)
                    and not node.table
                    and not isinstance(node.parent, exp.Group | exp.Ordered)
                ):
                    seen.setdefault(frm.this.name, set()).add(node.name)
    return {table: frozenset(cols) for table, cols in seen.items()}


def iter_own_nodes(node: exp.Expr) -> Iterator[exp.Expr]:
    """Nodes of one query level: does not descend into nested queries."""
    return node.walk(prune=lambda n: n is not node and isinstance(n, (exp.Query, exp.Subquery)))
