"""Where a column of the gold comes from, for the target finder (bot.scoring.perturb_targets): the real base
table behind its alias (looking outwards for a correlated one), the columns a scope owns, the column under pure
wrappers (a date function, a cast, lower/upper/trim), and the ORDER BY keys of a scope. Pure, on sqlglot scopes."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from bot.scoring.perturb_sql import table_text

_SAME_DOMAIN = (exp.Paren, exp.Lower, exp.Upper, exp.Trim, exp.DateTrunc, exp.TimestampTrunc)
_DATE_WRAPPERS = (exp.DateTrunc, exp.TimestampTrunc, exp.Extract, exp.TimeToStr)


def own_columns(node: exp.Expr, scope: Scope) -> list[exp.Column]:
    """The columns under `node` that are `scope`'s own (those `scope.columns` lists)."""
    own = {id(c) for c in scope.columns}
    return [c for c in node.find_all(exp.Column) if id(c) in own]


def unwrap_column(node: exp.Expr) -> tuple[exp.Column, bool, bool] | None:
    """The column under pure wrappers: (column, wrapped in a date function or date cast, same value domain)."""
    dated, same = False, True
    while not isinstance(node, exp.Column):
        if isinstance(node, exp.Cast):
            dated = dated or node.args["to"].is_type(*exp.DataType.TEMPORAL_TYPES)
        elif isinstance(node, _DATE_WRAPPERS):
            dated = True
        elif not isinstance(node, _SAME_DOMAIN):
            return None
        same = same and isinstance(node, _SAME_DOMAIN + (exp.Cast,))
        inner = node.expression if isinstance(node, exp.Extract) else node.this
        if not isinstance(inner, exp.Expr):
            return None
        node = inner
    return node, dated, same


def base_tables(scope: Scope) -> dict[str, str]:
    """The scope's base tables by alias (not CTEs, derived tables or table functions)."""
    tables: dict[str, str] = {}
    for alias, (_, source) in scope.selected_sources.items():
        name = table_text(source) if isinstance(source, exp.Table) else None
        if name:
            tables[alias] = name
    return tables


def resolve_column(column: exp.Column, scope: Scope) -> tuple[Scope, str] | None:
    """The scope and alias of the base table a column belongs to, looking outwards for a correlated alias."""
    if not column.table:
        selected = list(scope.selected_sources)
        return (scope, selected[0]) if len(selected) == 1 and selected[0] in base_tables(scope) else None
    current: Scope | None = scope
    while current is not None:
        if column.table in current.selected_sources:
            return (current, column.table) if column.table in base_tables(current) else None
        current = current.parent
    return None


def order_keys(scope: Scope) -> list[exp.Expr]:
    """ORDER BY keys (the query's and its windows'): an output alias or position stands for its select item."""
    select = scope.expression
    outputs = {e.alias: e.this for e in select.expressions if isinstance(e, exp.Alias)}
    keys: list[exp.Expr] = []
    order = select.args.get("order")
    for ordered in order.expressions if order else []:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.name) <= len(select.expressions):
            key = select.expressions[int(key.name) - 1].unalias()
        elif isinstance(key, exp.Column) and not key.table and key.name in outputs:
            key = outputs[key.name]
        keys.append(key)
    for window in scope.walk():
        spec = window.args.get("order") if isinstance(window, exp.Window) else None
        if spec:
            keys.extend(o.this for o in spec.expressions)
    return keys
