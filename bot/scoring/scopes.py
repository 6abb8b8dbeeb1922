"""Normalising passes that walk sqlglot scopes: which source a bare column belongs to, and table names that
do not depend on the aliases the author chose (see `bot.scoring.normalize` for the whole tuple of passes)."""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, build_scope


def _from_clause(select: exp.Expr) -> exp.From | None:
    node = select.args.get("from_") or select.args.get("from")
    return node if isinstance(node, exp.From) else None


def resolve_columns(expr: exp.Expr, ctx: Any) -> exp.Expr:
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


def unalias_tables(expr: exp.Expr, ctx: Any) -> exp.Expr:
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
    frm = _from_clause(select) if isinstance(select, exp.Select) else None
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
