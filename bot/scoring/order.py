"""What the gold's top-level query says about row order: ORDER BY keys mapped to output columns, and LIMIT.

Found by parsing (sqlglot), never by looking for the substring "order by".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import exp


@dataclass(frozen=True)
class OrderInfo:
    ordered: bool
    keys: tuple[str, ...] = ()  # the ORDER BY expressions as written (normalised SQL)
    limit: int | None = None
    offset: int | None = None
    has_distinct: bool = False


NO_ORDER = OrderInfo(ordered=False)


def _int_literal(node: exp.Expression | None) -> int | None:
    if node is None:
        return None
    if isinstance(node, exp.Fetch):  # FETCH FIRST n ROWS ONLY
        value = node.args.get("count")
    else:
        value = node.args.get("expression") if isinstance(node, exp.Limit | exp.Offset) else node
    if isinstance(value, exp.Literal) and value.is_int:
        return int(value.this)
    return None


def _unwrap(tree: Any) -> Any:
    """`(SELECT ... ORDER BY x)` orders its rows like the query inside the parentheses."""
    while (
        isinstance(tree, exp.Paren | exp.Subquery)
        and not tree.args.get("order")
        and not tree.args.get("limit")
    ):
        tree = tree.this
    return tree


@lru_cache(maxsize=4096)
def _parse(sql: str) -> exp.Expression | None:
    try:
        return _unwrap(sqlglot.parse_one(sql, read="postgres"))
    except Exception:  # noqa: BLE001 - sqlglot raises several kinds; unparsable means unknown
        return None


@lru_cache(maxsize=4096)
def order_info(sql: str) -> OrderInfo:
    tree = _parse(sql)
    if tree is None:
        return NO_ORDER
    order = tree.args.get("order")
    limit = _int_literal(tree.args.get("limit"))
    offset = _int_literal(tree.args.get("offset"))
    distinct = bool(tree.args.get("distinct")) if isinstance(tree, exp.Select) else False
    if not order:
        return OrderInfo(ordered=False, limit=limit, offset=offset, has_distinct=distinct)
    keys = tuple(o.this.sql(dialect="postgres") for o in order.expressions)
    return OrderInfo(ordered=True, keys=keys, limit=limit, offset=offset, has_distinct=distinct)


@lru_cache(maxsize=4096)
def _select_outputs(sql: str) -> tuple[tuple[str, str], ...]:
    """(output name, expression SQL) for each output column of the top-level SELECT (first branch of a union)."""
    tree = _parse(sql)
    while isinstance(tree, exp.SetOperation):
        tree = tree.this
    if not isinstance(tree, exp.Select):
        return ()
    out = []
    for e in tree.expressions:
        inner = e.this if isinstance(e, exp.Alias) else e
        out.append((e.alias_or_name.lower(), inner.sql(dialect="postgres").lower()))
    return tuple(out)


def key_positions(sql: str, info: OrderInfo, columns: tuple[str, ...]) -> tuple[int, ...] | None:
    """Indexes of the output columns the ORDER BY sorts on; None when a key is not among the outputs."""
    outputs = _select_outputs(sql)
    names = [c.lower() for c in columns]
    positions: list[int] = []
    for key in info.keys:
        k = key.lower()
        if k.isdigit():
            pos = int(k) - 1
            if 0 <= pos < len(columns):
                positions.append(pos)
                continue
            return None
        bare = k.split(".")[-1].strip('"')
        if outputs:
            by_expr = [i for i, (_, e) in enumerate(outputs) if e == k]
            if by_expr:
                positions.append(by_expr[0])
                continue
            by_alias = [i for i, (n, _) in enumerate(outputs) if n == k.strip('"')]
            if by_alias:
                positions.append(by_alias[0])
                continue
        if names.count(bare) == 1:
            positions.append(names.index(bare))
            continue
        return None
    return tuple(positions)


@lru_cache(maxsize=4096)
def with_limit(sql: str, limit: int) -> str | None:
    """The same query with another LIMIT (to probe for ties cut by the limit); None if it cannot be rewritten."""
    tree = _parse(sql)
    if not isinstance(tree, exp.Select | exp.SetOperation):
        return None
    try:
        return tree.limit(limit, copy=True).sql(dialect="postgres")
    except Exception:  # noqa: BLE001
        return None


KEY_PREFIX = "__sqlcanary_k"


@lru_cache(maxsize=4096)
def with_order_keys(sql: str) -> str | None:
    """The gold with its ORDER BY keys appended as output columns (`__sqlcanary_k0`, ...), so that the runs of
    equal keys can be found when the keys are not among the outputs. None for shapes where that changes rows."""
    tree = _parse(sql)
    if not isinstance(tree, exp.Select) or tree.args.get("distinct") or not tree.args.get("order"):
        return None
    try:
        probe = tree.copy()
        keys = [o.this.copy() for o in probe.args["order"].expressions]
        probe.select(*[exp.alias_(k, f"{KEY_PREFIX}{i}") for i, k in enumerate(keys)], copy=False)
        return probe.sql(dialect="postgres")
    except Exception:  # noqa: BLE001
        return None


@lru_cache(maxsize=4096)
def without_distinct(sql: str) -> str:
    """The query with every DISTINCT removed, as Spider's test-suite evaluator does by default; unchanged when it
    cannot be parsed."""
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except Exception:  # noqa: BLE001
        return sql
    if tree is None or not tree.find(exp.Distinct):
        return sql

    def strip(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Select) and node.args.get("distinct"):
            node.set("distinct", None)
        if (
            isinstance(node, exp.Distinct)
            and node.parent is not None
            and not isinstance(node.parent, exp.Select)
        ):
            return node.expressions[0] if len(node.expressions) == 1 else node
        return node

    try:
        return tree.transform(strip).sql(dialect="postgres")
    except Exception:  # noqa: BLE001
        return sql
