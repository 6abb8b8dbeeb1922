"""sqlglot normalisation passes for the structural scorer: a tuple of small rules, each guarded.

Modelled on sqlglot's optimizer (a tuple of rules applied in order). Every pass takes a parsed statement and
a `PassContext` and returns the rewritten statement (it may mutate it). `run_passes` applies them to a copy;
a pass that raises is skipped and named, so a verdict always comes out. No pass is exponential (no CNF/DNF).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.canonicalize import canonicalize
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.qualify_tables import qualify_tables
from sqlglot.optimizer.simplify import simplify

from bot.scoring import canonical, rewrites, scopes
from bot.scoring.canonical import DIALECT

_SAFE_NAME = re.compile(r"[a-z_][a-z0-9_$]*")
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


def merge_derived_tables(expr: exp.Expr, ctx: PassContext) -> exp.Expr:
    """A derived table that only selects, filters and joins is merged into the query that reads it (sqlglot's
    merge_subqueries): a KB snippet wrapped as `FROM (SELECT ... JOIN ...) src` equals the flat join."""
    return merge_subqueries(expr)


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


PASSES: tuple[tuple[str, Pass], ...] = (
    ("inline_ctes", inline_ctes),
    ("qualify", qualify_query),
    ("normalize_names", normalize_names),
    ("unquote_identifiers", unquote_identifiers),
    ("drop_default_schema", drop_default_schema),
    ("resolve_columns", scopes.resolve_columns),
    ("resolve_order_refs", resolve_order_refs),
    ("merge_subqueries", merge_derived_tables),
    ("unalias_tables", scopes.unalias_tables),
    ("drop_redundant_aliases", drop_redundant_aliases),
    ("canonicalize", canonicalize_query),
    ("strip_parens", canonical.strip_parens),
    ("fold_literal_casts", canonical.fold_literal_casts),
    ("expand_between", canonical.expand_between),
    ("exists_to_in", rewrites.exists_to_in),
    ("drop_zero_guards", canonical.drop_zero_guards),
    ("drop_noop_casts", canonical.drop_noop_casts),
    ("date_ranges", rewrites.date_ranges),
    ("simplify", simplify_query),
    ("orient_comparisons", canonical.orient_comparisons),
    ("sort_in_lists", canonical.sort_in_lists),
    ("sort_operands", canonical.sort_operands),
    ("sort_connectors", canonical.sort_connectors),
    ("merge_point_ranges", canonical.merge_point_ranges),
    ("restore_parens", canonical.restore_parens),
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
